import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localTime, renderAudit, targetText } from "../../src/cli/render-audit.ts";
import type { AuditReply } from "../../src/cli/replies.ts";

/** `pinboard audit` for humans: local times, who, how, what it touched and what it said. */

let tz: string | undefined;
beforeAll(() => {
  tz = process.env.TZ;
  process.env.TZ = "Asia/Kolkata"; // UTC+05:30: a local time is not the UTC one
});
afterAll(() => {
  if (tz === undefined) delete process.env.TZ;
  else process.env.TZ = tz;
});

const AT = Date.UTC(2025, 2, 4, 11, 35, 9); // 17:05:09 in Kolkata

describe("pinboard audit's rendering", () => {
  it("prints the machine's local time to the second", () => {
    // Where setting TZ takes effect (a test file in a process of its own) this is Kolkata's time;
    // a runner sharing one thread among files may have fixed the zone before: then the local
    // time is whatever the thread's zone says, and the expected string follows it.
    const d = new Date(AT);
    const two = (n: number) => String(n).padStart(2, "0");
    const local = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
    expect(localTime(AT)).toBe(local);
    if (d.getTimezoneOffset() === -330) expect(localTime(AT)).toBe("2025-03-04 17:05:09");
    if (d.getTimezoneOffset() !== 0) expect(localTime(AT)).not.toBe("2025-03-04 11:35:09");
  });

  it("names a target in a few words: the client and its namespaces, a placement, or the fleet", () => {
    expect(targetText({ sessionId: "s", clientId: "w-a", namespaces: ["/a", "/b"] })).toBe("client w-a (/a,/b)");
    expect(targetText({ namespace: "/threads", id: "t-42", env: "prod", hostname: "h.example" })).toBe(
      "/threads/t-42 @prod on h.example",
    );
    expect(targetText({ namespace: "/threads" })).toBe("/threads");
    expect(targetText({})).toBe("fleet");
  });

  it("one line per entry, newest first as the server sent them, and a note when older ones remain", () => {
    const clientA = { sessionId: "s", clientId: "w-a", namespaces: ["/a"] };
    const answer: AuditReply = {
      entries: [
        {
          id: "2-0",
          at: AT,
          kind: "action",
          type: "drain",
          subject: "alice",
          via: "console",
          target: clientA,
          detail: { deadline: null },
        },
        {
          id: "1-0",
          at: AT - 60_000,
          kind: "event",
          type: "worker.ejected",
          subject: null,
          via: "data-plane",
          target: clientA,
          detail: { ejectedUntil: 5, ejections: 1 },
        },
      ],
      cursor: "1-0",
    };
    expect(renderAudit(answer).split("\n")).toEqual([
      "TIME                 TYPE            BY     VIA         TARGET           DETAIL",
      `${localTime(AT)}  drain           alice  console     client w-a (/a)  deadline=null`,
      `${localTime(AT - 60_000)}  worker.ejected  -      data-plane  client w-a (/a)  ejectedUntil=5 ejections=1`,
      "(older entries: pinboard audit --before 1-0)",
    ]);
    expect(renderAudit({ entries: [] })).toBe("no audit entries this credential may see");
  });
});
