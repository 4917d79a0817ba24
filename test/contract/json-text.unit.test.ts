import { describe, expect, it } from "vitest";
import { parseJson, parseJsonObject } from "../../src/contract/json-text.ts";

describe("parseJson", () => {
  it("returns the value of JSON text, null and false included", () => {
    expect(parseJson('{"a":[1,"x"]}')).toEqual({ a: [1, "x"] });
    expect(parseJson(" 42 ")).toBe(42);
    expect(parseJson("null")).toBeNull();
    expect(parseJson("false")).toBe(false);
  });

  it("returns undefined for text that is not JSON, empty text included", () => {
    for (const text of ["", "  ", "{", "<html>", "undefined", "{'a':1}"]) expect(parseJson(text)).toBeUndefined();
  });
});

describe("parseJsonObject", () => {
  it("returns the object JSON text holds", () => {
    expect(parseJsonObject('{"error":"forbidden"}')).toEqual({ error: "forbidden" });
    expect(parseJsonObject("{}")).toEqual({});
  });

  it("returns null for anything but an object: arrays, scalars, null, text that is not JSON", () => {
    for (const text of ["[]", '["a"]', "1", '"text"', "true", "null", "", "{"])
      expect(parseJsonObject(text)).toBeNull();
  });
});
