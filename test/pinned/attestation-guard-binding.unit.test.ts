import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { CONTRACT_ACCEPTANCE, signAttestation } from "../../src/contract/attestation.ts";
import { AttestationGuard, type GuardOptions, sameTarget } from "../../src/pinned/attestation-guard.ts";
import { SeenAttestations } from "../../src/pinned/seen-attestations.ts";

/**
 * The worker's check of Pinboard's attestation on each call, without a network: the token names
 * an accepted audience and this very request (method, target under the base path, epoch), is
 * used once, and a token for a session not known yet waits for the register under way
 * (attestation-guard.test.ts runs the same through a worker's HTTP server).
 */

const SECRET = "worker-secret-0123456789";
const NOW_S = 1_700_000_000;
const BASE = "http://10.0.0.7:9001";

function guard(extra: Partial<GuardOptions> = {}, audiences: string[] = ["sess-1"]) {
  const warnings: string[] = [];
  const infos: string[] = [];
  const g = new AttestationGuard({
    secret: SECRET,
    audiences: () => audiences,
    basePath: "",
    requireBinding: false,
    acceptance: CONTRACT_ACCEPTANCE,
    seen: new SeenAttestations(1000),
    nowMs: () => NOW_S * 1000,
    log: {
      info: (m, f) => infos.push(`${m} ${JSON.stringify(f)}`),
      warn: (m, f) => warnings.push(`${m} ${JSON.stringify(f)}`),
      error() {},
    },
    ...extra,
  });
  return { g, warnings, infos };
}

/** A token with exactly these claims (no jti unless given), signed as Pinboard signs. */
function rawToken(claims: Record<string, unknown>, secret = SECRET): string {
  const part = (v: object) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const signed = `${part({ alg: "HS256", typ: "pinboard+jwt" })}.${part({ iat: NOW_S, exp: NOW_S + 30, ...claims })}`;
  return `${signed}.${createHmac("sha256", secret).update(signed).digest("base64url")}`;
}

/** A token bound to a request (`epoch` null: one without an epoch). */
const bound = (aud = "sess-1", htm = "GET", htu = "/ns/a/x?q=1", epoch: string | null = "7") =>
  signAttestation(SECRET, { aud, htm, htu, ...(epoch === null ? {} : { epoch }) }, NOW_S);

function request(token: string | null, method = "GET", path = "/ns/a/x?q=1", epoch: string | null = "7") {
  const headers = new Headers();
  if (token !== null) headers.set("Pinboard-Attestation", token);
  if (epoch !== null) headers.set("Pinboard-Epoch", epoch);
  return new Request(`${BASE}${path}`, { method, headers });
}

describe("AttestationGuard.verify", () => {
  it("accepts a token that names this request and an accepted audience, once", async () => {
    const { g } = guard();
    const token = await bound();
    expect(await g.verify(request(token))).toMatchObject({ aud: "sess-1", htm: "GET", htu: "/ns/a/x?q=1", epoch: "7" });
    expect(await g.verify(request(token))).toBeNull();
  });

  it("refuses no token, another secret, and a token with no audience accepted and no register under way", async () => {
    expect(await guard().g.verify(request(null))).toBeNull();
    expect(await guard().g.verify(request(""))).toBeNull();
    const other = await signAttestation(
      "another-secret-0123456",
      { aud: "sess-1", htm: "GET", htu: "/ns/a/x?q=1", epoch: "7" },
      NOW_S,
    );
    expect(await guard().g.verify(request(other))).toBeNull();
    expect(await guard({}, []).g.verify(request(await bound()))).toBeNull();
    expect(await guard({}, ["sess-2"]).g.verify(request(await bound()))).toBeNull();
  });

  it("ignores empty audiences", async () => {
    const { g } = guard({ audiences: () => [null, undefined, ""] });
    expect(await g.verify(request(rawToken({ aud: "", jti: "j".repeat(16) }), "GET", "/x", null))).toBeNull();
  });

  it("refuses a token for another method, target or epoch", async () => {
    const { g } = guard();
    expect(await g.verify(request(await bound(), "POST"))).toBeNull();
    expect(await g.verify(request(await bound(), "GET", "/ns/a/x?q=2"))).toBeNull();
    expect(await g.verify(request(await bound(), "GET", "/ns/a/y?q=1"))).toBeNull();
    expect(await g.verify(request(await bound(), "GET", "/ns/a/x?q=1", "8"))).toBeNull();
    expect(await g.verify(request(await bound(), "GET", "/ns/a/x?q=1", null))).toBeNull();
    // A token without an epoch on a call that carries one.
    expect(await g.verify(request(await bound("sess-1", "GET", "/ns/a/x?q=1", null)))).toBeNull();
    expect(
      await g.verify(request(await bound("sess-1", "GET", "/ns/a/x?q=1", null), "GET", "/ns/a/x?q=1", null)),
    ).not.toBeNull();
    // A token without an epoch claim on a call with a malformed epoch is refused too: its binding
    // (epoch absent) does not match the header. (Only a token that names no request at all lets a
    // malformed epoch through, to be answered 400 malformed placement epoch.)
    expect(
      await g.verify(request(await bound("sess-1", "GET", "/ns/a/x?q=1", null), "GET", "/ns/a/x?q=1", "x7")),
    ).toBeNull();
  });

  it("takes htu relative to the advertise URL's base path", async () => {
    const { g } = guard({ basePath: "/pre" });
    expect(await g.verify(request(await bound(), "GET", "/pre/ns/a/x?q=1"))).not.toBeNull();
    expect(await g.verify(request(await bound(), "GET", "/ns/a/x?q=1"))).toBeNull();
  });

  it("accepts an unbound token where the call has no epoch, unless requireBinding; a partial binding never", async () => {
    const unbound = rawToken({ aud: "sess-1", jti: "a".repeat(16) });
    expect(await guard().g.verify(request(unbound, "GET", "/x", null))).toMatchObject({ aud: "sess-1" });
    expect(await guard({ requireBinding: true }).g.verify(request(unbound, "GET", "/x", null))).toBeNull();
    expect(await guard().g.verify(request(unbound, "GET", "/x", "7"))).toBeNull();
    const htmOnly = rawToken({ aud: "sess-1", jti: "b".repeat(16), htm: "GET" });
    expect(await guard().g.verify(request(htmOnly, "GET", "/x", null))).toBeNull();
    // htm and epoch without htu names no target: refused even on the root path.
    const noHtu = rawToken({ aud: "sess-1", jti: "d".repeat(16), htm: "GET", epoch: "7" });
    expect(await guard().g.verify(request(noHtu, "GET", "/", "7"))).toBeNull();
    const epochOnly = rawToken({ aud: "sess-1", jti: "c".repeat(16), epoch: "7" });
    expect(await guard().g.verify(request(epochOnly, "GET", "/x", "7"))).toBeNull();
  });

  it("accepts a token without jti each time, warning once, unless requireBinding", async () => {
    const { g, warnings } = guard();
    const noJti = rawToken({ aud: "sess-1", htm: "GET", htu: "/x" });
    expect(await g.verify(request(noJti, "GET", "/x", null))).not.toBeNull();
    expect(await g.verify(request(noJti, "GET", "/x", null))).not.toBeNull();
    expect(warnings).toEqual([
      'attestation without jti accepted: a Pinboard in front predates single-use attestations, so its tokens can be replayed until they expire; set requireBoundAttestation once every Pinboard is upgraded {"aud":"sess-1"}',
    ]);
    expect(await guard({ requireBinding: true }).g.verify(request(noJti, "GET", "/x", null))).toBeNull();
    expect(await guard({ log: undefined }).g.verify(request(noJti, "GET", "/x", null))).not.toBeNull();
  });

  it("remembers a jti until the token's acceptance ends", async () => {
    const seen = new SeenAttestations(1000);
    const { g } = guard({ seen });
    await g.verify(request(await bound()));
    expect(seen.size).toBe(1);
  });

  it("a token for a session not known yet waits for the register under way and is judged against its answer", async () => {
    const audiences: string[] = [];
    let settle!: () => void;
    const registering = new Promise<void>((r) => (settle = r));
    const { g, infos } = guard({ audiences: () => audiences, registering: () => registering });
    const verdict = g.verify(request(await bound("sess-new")));
    await new Promise((r) => setTimeout(r, 10));
    expect(infos).toEqual([
      'attestation names a session not known yet: waiting for the register answer {"aud":"sess-new"}',
    ]);
    audiences.push("sess-new");
    settle();
    expect(await verdict).toMatchObject({ aud: "sess-new" });

    const none: string[] = ["sess-1"];
    const after = guard({ audiences: () => none, registering: () => Promise.resolve() });
    expect(await after.g.verify(request(await bound("sess-other")))).toBeNull();
    const idle = guard({ registering: () => null });
    expect(await idle.g.verify(request(await bound("sess-other")))).toBeNull();
    expect(idle.infos).toEqual([]); // nothing to wait for, nothing said
    // Without a logger the wait is the same.
    const known: string[] = ["sess-1"];
    const answered = new Promise<void>((resolve) =>
      setTimeout(() => {
        known.push("sess-late"); // the register's answer brings the new session
        resolve();
      }, 20),
    );
    const quiet = guard({ log: undefined, audiences: () => known, registering: () => answered });
    expect(await quiet.g.verify(request(await bound("sess-late")))).toMatchObject({ aud: "sess-late" });
  });

  it("an audience that became accepted while the signature was checked needs no wait", async () => {
    const audiences: string[] = [];
    const { g, infos } = guard({
      audiences: () => audiences,
      registering: () => {
        audiences.push("sess-1");
        return new Promise<void>(() => {}); // never settles: waiting would hang the test
      },
    });
    expect(await g.verify(request(await bound()))).not.toBeNull();
    expect(infos).toEqual([]);
  });
});

describe("AttestationGuard.hasProxySecret", () => {
  it("is true for the worker's own secret in Pinboard-Proxy-Secret only", async () => {
    const { g } = guard();
    const withSecret = (value: string | null) =>
      new Request(BASE, { headers: value === null ? {} : { "Pinboard-Proxy-Secret": value } });
    expect(await g.hasProxySecret(withSecret(SECRET))).toBe(true);
    expect(await g.hasProxySecret(withSecret(`${SECRET}x`))).toBe(false);
    expect(await g.hasProxySecret(withSecret(""))).toBe(false);
    expect(await g.hasProxySecret(withSecret(null))).toBe(false);
  });
});

describe("sameTarget", () => {
  const url = (path: string) => new URL(`${BASE}${path}`);
  it("compares path, query and fragment as the URL parser reads them, percent-encoding as written", () => {
    expect(sameTarget("/a/b?x=1", "", url("/a/b?x=1"))).toBe(true);
    expect(sameTarget("/a/./b", "", url("/a/b"))).toBe(true);
    expect(sameTarget("/a/b?x=1", "", url("/a/b?x=2"))).toBe(false);
    expect(sameTarget("/a/b", "", url("/a/c"))).toBe(false);
    expect(sameTarget("/a", "", url("/%61"))).toBe(false);
    expect(sameTarget("/a#f", "", url("/a"))).toBe(false);
    expect(sameTarget("/a", "/pre", url("/pre/a"))).toBe(true);
    // An htu that makes no URL (here an invalid port) is no target.
    expect(sameTarget(":99999", "", url("/"))).toBe(false);
  });
});
