/**
 * The workers' logs (served requests, user-database writes, layer refusals), one JSON object a
 * line, written synchronously: a line is in the file before the answer it records leaves the
 * process, so a kill -9 cannot lose the record of an answer a client got. The checker relies on
 * it ("unlogged-answer"). writeLine is the one place a line is written.
 */
import { openSync, readFileSync, writeSync } from "node:fs";

export type LineLog = (entry: object) => void;

export function openLineLog(path: string): LineLog {
  const fd = openSync(path, "a");
  return (entry) => writeLine(fd, entry);
}

function writeLine(fd: number, entry: object): void {
  writeSync(fd, `${JSON.stringify(entry)}\n`);
}

/** Reads a log back, one JSON object a line (a missing file: none). */
export function readJsonLines<T>(path: string): T[] {
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as T);
}
