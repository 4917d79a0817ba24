/**
 * The workers' logs (served requests, user-database writes, layer refusals), one JSON object a
 * line, written synchronously: a line is in the file before the answer it records leaves the
 * process, so a kill -9 cannot lose the record of an answer a client got. The checker relies on
 * it ("unlogged-answer"). writeLine is the one place a line is written.
 */
import { openSync, writeSync } from "node:fs";

export type LineLog = (entry: object) => void;

export function openLineLog(path: string): LineLog {
  const fd = openSync(path, "a");
  return (entry) => writeLine(fd, entry);
}

function writeLine(fd: number, entry: object): void {
  writeSync(fd, `${JSON.stringify(entry)}\n`);
}
