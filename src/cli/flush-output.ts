/** Resolves once everything written to `stream` so far has been handed to the OS (before process.exit). */
export function flush(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => stream.write("", () => resolve()));
}
