import { describe, expect, it } from "vitest";
import {
  bytes,
  type Column,
  NONE,
  relativeSeconds,
  renderPairs,
  renderTable,
  seconds,
  yesNo,
} from "../../src/cli/table.ts";

/** The CLI's plain-text output, character for character: tables, key–value lines and cell formats. */

interface Row {
  name: string;
  count: number;
}
const columns: Array<Column<Row>> = [
  { header: "NAME", cell: (r) => r.name },
  { header: "COUNT", cell: (r) => String(r.count), align: "right" },
  { header: "NOTE", cell: (r) => (r.count > 9 ? "many" : NONE) },
];

describe("renderTable", () => {
  it("aligns columns two spaces apart, right-aligned where the column says, trailing spaces trimmed", () => {
    const rows = [
      { name: "alpha", count: 7 },
      { name: "b", count: 1234 },
    ];
    expect(renderTable(columns, rows)).toBe(["NAME   COUNT  NOTE", "alpha      7  -", "b       1234  many"].join("\n"));
  });

  it("renders the header line alone without rows", () => {
    expect(renderTable(columns, [])).toBe("NAME  COUNT  NOTE");
  });

  it("shows a cell's controls as escapes, so it stays one line, and counts width in code points", () => {
    const rows = [
      { name: "a\nb\r\tc", count: 1 },
      { name: "日本語", count: 2 },
      { name: "😀", count: 3 },
      { name: "\u001b[2K\u009b\u202e", count: 4 },
    ];
    expect(renderTable(columns, rows)).toBe(
      [
        `NAME${" ".repeat(19)}COUNT  NOTE`,
        `a\\u000ab\\u000d\\u0009c${" ".repeat(6)}1  -`,
        `日本語${" ".repeat(24)}2  -`,
        `😀${" ".repeat(26)}3  -`,
        "\\u001b[2K\\u009b\\u202e      4  -",
      ].join("\n"),
    );
  });
});

describe("renderPairs", () => {
  it("aligns the values after the longest key and its colon", () => {
    expect(
      renderPairs([
        ["uptime", "4s"],
        ["cold start", "over"],
        ["x", ""],
      ]),
    ).toBe(["uptime:      4s", "cold start:  over", "x:"].join("\n"));
  });

  it("shows a value's controls as escapes", () => {
    expect(renderPairs([["client", "w\r\u001b]0;t\u0007\n"]])).toBe("client:  w\\u000d\\u001b]0;t\\u0007\\u000a");
  });

  it("keeps a value on one line, and renders nothing for no pairs", () => {
    expect(renderPairs([["k", "a\nb"]])).toBe("k:  a\\u000ab");
    expect(renderPairs([])).toBe("");
  });
});

describe("cell formats", () => {
  it("relativeSeconds: in Ns, Ns ago or now, rounded to whole seconds; bare seconds when asked", () => {
    expect(relativeSeconds(15_000, 1_000)).toBe("in 14s");
    expect(relativeSeconds(1_000, 13_000)).toBe("12s ago");
    expect(relativeSeconds(1_400, 1_000)).toBe("now");
    expect(relativeSeconds(1_500, 1_000)).toBe("in 1s");
    expect(relativeSeconds(15_000, 1_000, true)).toBe("14s");
    expect(relativeSeconds(1_000, 4_000, true)).toBe("-3s");
    expect(relativeSeconds(1_000, 1_000, true)).toBe("0s");
  });

  it("seconds: whole seconds", () => {
    expect(seconds(3_600_000)).toBe("3600s");
    expect(seconds(1_499)).toBe("1s");
    expect(seconds(1_500)).toBe("2s");
    expect(seconds(0)).toBe("0s");
  });

  it("bytes: binary units with one decimal, plain bytes under 1 KiB", () => {
    expect(bytes(0)).toBe("0 B");
    expect(bytes(1023)).toBe("1023 B");
    expect(bytes(1024)).toBe("1.0 KiB");
    expect(bytes(1536)).toBe("1.5 KiB");
    expect(bytes(50_541_363)).toBe("48.2 MiB");
    expect(bytes(3 * 1024 ** 3)).toBe("3.0 GiB");
    expect(bytes(2 * 1024 ** 5)).toBe("2048.0 TiB");
  });

  it("yesNo: yes, no, or - when absent", () => {
    expect([yesNo(true), yesNo(false), yesNo(undefined)]).toEqual(["yes", "no", "-"]);
    expect(NONE).toBe("-");
  });
});
