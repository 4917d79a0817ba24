import { describe, expect, it } from "vitest";
import { suggestCommands, unknownCommandMessage } from "../../src/cli/suggest.ts";
import { editDistance } from "../../src/config/edit-distance.ts";

/**
 * An unknown command names the command it most likely meant: within two edits, or a prefix of
 * at least two characters, case-insensitively; nothing when no command is that close.
 */

describe("editDistance", () => {
  it("counts insertions, deletions and substitutions", () => {
    expect(editDistance("worker", "workers")).toBe(1);
    expect(editDistance("stast", "stats")).toBe(2);
    expect(editDistance("windDown".toLowerCase(), "wind-down")).toBe(1);
    expect(editDistance("", "drain")).toBe(5);
    expect(editDistance("drain", "drain")).toBe(0);
  });
});

describe("suggestCommands", () => {
  it("suggests the closest command for a typo, a prefix or another case", () => {
    expect(suggestCommands("worker")).toEqual(["workers"]);
    expect(suggestCommands("helth")).toEqual(["health"]);
    expect(suggestCommands("Stats")).toEqual(["stats"]);
    expect(suggestCommands("over")).toEqual(["overview"]);
    expect(suggestCommands("sweep")).toEqual(["sweep-now"]);
    expect(suggestCommands("winddown")).toEqual(["wind-down"]);
    expect(suggestCommands("drian")).toEqual(["drain"]);
  });

  it("suggests nothing when no command is within two edits or shares a two-letter prefix", () => {
    expect(suggestCommands("frobnicate")).toEqual([]);
    expect(suggestCommands("s")).toEqual([]);
    expect(suggestCommands("workerzzz")).toEqual([]);
    expect(suggestCommands("")).toEqual([]);
    expect(suggestCommands("drain x")).toEqual([]);
  });

  it("lists every command at the same closest distance", () => {
    expect(suggestCommands("rain")).toEqual(["drain"]);
    expect(suggestCommands("udrain")).toEqual(["drain", "undrain"]);
  });
});

describe("unknownCommandMessage", () => {
  it("adds the suggestion after the unknown name", () => {
    expect(unknownCommandMessage("worker")).toBe('unknown command "worker"; did you mean `workers`?');
    expect(unknownCommandMessage("udrain")).toBe('unknown command "udrain"; did you mean `drain` or `undrain`?');
    expect(unknownCommandMessage("frobnicate")).toBe('unknown command "frobnicate"');
  });
});
