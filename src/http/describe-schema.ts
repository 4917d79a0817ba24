import { z } from "zod";

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: JsonSchema | boolean;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  pattern?: string;
};

/**
 * Renders a zod schema as the compact TypeScript-like shape quoted in 400 answers:
 * `expected {sessionId: string, headroom: number, acks?: string[]}`.
 */
export function describeSchema(schema: z.ZodType): string {
  return render(z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema);
}

function render(s: JsonSchema): string {
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(" | ");
  const union = s.anyOf ?? s.oneOf;
  if (union) return union.map(render).join(" | ");
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (types.length > 1) return types.map((type) => render({ ...s, type })).join(" | ");
  switch (types[0]) {
    case "object": {
      if (s.properties) {
        const required = new Set(s.required ?? []);
        const fields = Object.entries(s.properties).map(([name, value]) =>
          required.has(name) ? `${name}: ${render(value)}` : `${name}?: ${render(value).replace(/ \| null$/, "")}`,
        );
        return `{${fields.join(", ")}}`;
      }
      const values = typeof s.additionalProperties === "object" ? render(s.additionalProperties) : "unknown";
      return `{[key: string]: ${values}}`;
    }
    case "array": {
      const item = s.items ? render(s.items) : "unknown";
      return item.includes(" ") && !item.startsWith("{") ? `(${item})[]` : `${item}[]`;
    }
    case "integer":
      return "integer";
    case "string":
      return s.pattern === "^\\d+$" ? '"digits"' : "string";
    case "number":
    case "boolean":
    case "null":
      return types[0];
    default:
      return "unknown";
  }
}
