import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";

/**
 * A WebSocket client written by hand on a TCP socket, for what a real client library will not
 * do: send a frame whose header declares more than follows, leave a message unfinished, or
 * complete the handshake and then never read nor answer a ping.
 */
export interface RawWebSocket {
  socket: Socket;
  /** Frames the server sent after its 101, as far as they have arrived whole. */
  frames(): Array<{ opcode: number; payload: Buffer }>;
  /** The code of the server's close frame, once one arrived. */
  closeCode(): number | undefined;
  /** Resolves when the TCP connection has ended (never, for a socket that stopped reading). */
  ended: Promise<void>;
}

/** Opens the connection and completes the handshake; rejects unless the answer is 101. */
export function rawWebSocket(url: string): Promise<RawWebSocket> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname);
    let data = Buffer.alloc(0);
    let upgraded = false;
    const ended = new Promise<void>((r) => socket.once("close", () => r()));
    socket.on("error", () => {});
    socket.on("connect", () => {
      const lines = [
        `GET ${target.pathname}${target.search} HTTP/1.1`,
        `Host: ${target.host}`,
        "Connection: Upgrade",
        "Upgrade: websocket",
        `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}`,
        "Sec-WebSocket-Version: 13",
      ];
      socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    });
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (upgraded) return;
      const end = data.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = data.subarray(0, end).toString("latin1");
      if (!/^HTTP\/1\.1 101 /.test(head)) {
        socket.destroy();
        reject(new Error(`upgrade answered ${head.split("\r\n")[0]}`));
        return;
      }
      upgraded = true;
      data = data.subarray(end + 4);
      const frames = () => serverFrames(data);
      resolve({
        socket,
        frames,
        closeCode: () => {
          const close = frames().find((f) => f.opcode === 0x8);
          return close && close.payload.length >= 2 ? close.payload.readUInt16BE(0) : undefined;
        },
        ended,
      });
    });
    socket.once("close", () => {
      if (!upgraded) reject(new Error("connection closed before the 101"));
    });
  });
}

/**
 * One masked client frame. `declaredLength` (default: the payload's) is what the header says;
 * a larger one leaves the frame unfinished after `payload`.
 */
export function clientFrame(
  opcode: number,
  payload: Buffer,
  options: { fin?: boolean; declaredLength?: number } = {},
): Buffer {
  const length = options.declaredLength ?? payload.length;
  let header: Buffer;
  if (length < 126) header = Buffer.from([0, 0x80 | length]);
  else if (length < 65536) {
    header = Buffer.alloc(4);
    header[1] = 0x80 | 126;
    header.writeUInt16BE(length, 2);
  } else {
    header = Buffer.alloc(10);
    header[1] = 0x80 | 127;
    header.writeBigUInt64BE(BigInt(length), 2);
  }
  header[0] = (options.fin === false ? 0 : 0x80) | opcode;
  const mask = randomBytes(4);
  const masked = Buffer.alloc(payload.length);
  for (let i = 0; i < payload.length; i++) masked[i] = payload[i]! ^ mask[i % 4]!;
  return Buffer.concat([header, mask, masked]);
}

/** The whole (unmasked) frames at the start of `data`. */
function serverFrames(data: Buffer): Array<{ opcode: number; payload: Buffer }> {
  const frames: Array<{ opcode: number; payload: Buffer }> = [];
  let at = 0;
  while (at + 2 <= data.length) {
    let length = data[at + 1]! & 0x7f;
    let start = at + 2;
    if (length === 126) {
      if (start + 2 > data.length) break;
      length = data.readUInt16BE(start);
      start += 2;
    } else if (length === 127) {
      if (start + 8 > data.length) break;
      length = Number(data.readBigUInt64BE(start));
      start += 8;
    }
    if (start + length > data.length) break;
    frames.push({ opcode: data[at]! & 0x0f, payload: data.subarray(start, start + length) });
    at = start + length;
  }
  return frames;
}
