/** A bench child's setting from its environment: `fallback` when unset, or fail naming the child. */
export function childEnv(child: string, name: string, fallback?: string): string {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${child}: ${name} is required`);
  return value;
}
