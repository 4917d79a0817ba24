import { terminalSafe } from "../contract/terminal-safe.ts";

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

/**
 * One JSON line per event on the console (stdout/stderr on Node, the Workers log stream on
 * Cloudflare). Callers never pass secrets or accounts in fields. Fields carry worker and client
 * strings: JSON escapes C0 inside them, and the line escapes what JSON leaves raw (DEL, C1, the
 * bidirectional controls, U+2028/9), so no control reaches a terminal that tails the log.
 */
export function createLogger(level: LogLevel, sink: Pick<Console, "log" | "error"> = console): Logger {
  const at = ORDER[level];
  const emit = (lvl: Exclude<LogLevel, "silent">, message: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < at) return;
    const line = terminalSafe(JSON.stringify({ level: lvl, time: new Date().toISOString(), msg: message, ...fields }));
    if (lvl === "error" || lvl === "warn") sink.error(line);
    else sink.log(line);
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}
