/** One teardown that runs `steps` one after the other, in the order given (each awaited before the next). */
export function inOrder(...steps: Array<() => Promise<unknown>>): () => Promise<void> {
  return async () => {
    for (const step of steps) await step();
  };
}
