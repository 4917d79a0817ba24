import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { mintCredential } from "../../src/auth/mint.ts";
import type { Command, Globals } from "../../src/cli/args.ts";
import { HttpError, UnreachableError } from "../../src/cli/client.ts";
import { explainHttpError, explainUnreachable } from "../../src/cli/explain.ts";

/**
 * The hint lines for the cases the process tests (cli.test.ts, health.test.ts) do not reach:
 * the default URL, a timeout, a credential without a pinboard claim, a refused wind-down.
 */

const SECRET = "explain-test-secret-0123456789abcdef";
const NOW = Date.now();
const globals = (over: Partial<Globals> = {}): Globals => ({
  url: "http://127.0.0.1:8787",
  urlFrom: "default",
  token: "t",
  tokenFrom: "PINBOARD_OPERATOR_TOKEN",
  json: false,
  ...over,
});
const workers: Command = { name: "workers" };

describe("explainUnreachable", () => {
  it("with the default URL says neither setting is set", () => {
    const err = new UnreachableError("http://127.0.0.1:8787", "connect ECONNREFUSED 127.0.0.1:8787");
    expect(explainUnreachable(err, globals())).toEqual([
      "hint: Pinboard is not running at http://127.0.0.1:8787, or the host, port or URL is wrong: start it " +
        "(`npm start` listens on http://127.0.0.1:8787 unless PORT or HOST say otherwise) or check --url or " +
        "PINBOARD_URL (neither is set: the CLI used its default)",
    ]);
  });

  it("after a timeout does not claim that nothing runs there", () => {
    const err = new UnreachableError("https://pb.example", "no answer in time");
    expect(explainUnreachable(err, globals({ url: "https://pb.example", urlFrom: "PINBOARD_URL" }))).toEqual([
      "hint: nothing at https://pb.example answered within 60s: Pinboard may be overloaded, or the host drops " +
        "connections; check PINBOARD_URL",
    ]);
  });
});

describe("explainHttpError", () => {
  it("a 404 with the default URL names both settings", () => {
    const err = new HttpError(404, "not found", "GET", "http://127.0.0.1:8787/registry/workers");
    expect(explainHttpError(err, { command: workers, globals: globals(), now: NOW })[1]).toBe(
      "hint: check --url or PINBOARD_URL against the server's PINBOARD_BASE_PATH: with PINBOARD_BASE_PATH=/pb, " +
        "use http://127.0.0.1:8787/pb (with PINBOARD_ADMIN_PORT set, the operator routes are on the admin port)",
    );
  });

  it("a 403 for an operator credential without a pinboard claim says the claim is missing or malformed", async () => {
    const token = await new SignJWT({ scopes: ["pinboard:operator"] })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("op")
      .sign(new TextEncoder().encode(SECRET));
    const hints = explainHttpError(new HttpError(403, "forbidden", "GET", "http://127.0.0.1:8787/registry/workers"), {
      command: workers,
      globals: globals({ token, tokenFrom: "--token" }),
      now: NOW,
    });
    expect(hints[0]).toBe(
      "hint: the credential from --token has the pinboard:operator scope, but its pinboard claim is missing or " +
        'malformed (expected {"namespaces":["*" or "/ns", …], …})',
    );
  });

  it("a 403 forbidden on wind-down with a full operator credential blames the placement's owner", async () => {
    const token = await mintCredential({
      secret: SECRET,
      sub: "op",
      scopes: ["pinboard:operator"],
      pinboard: { namespaces: ["/threads"] },
    });
    const command: Command = { name: "wind-down", namespace: "/threads", id: "x", deadline: 5 };
    expect(
      explainHttpError(new HttpError(403, "forbidden", "POST", "http://127.0.0.1:8787/registry/wind_down"), {
        command,
        globals: globals({ token }),
        now: NOW,
      }),
    ).toEqual([
      "hint: `pinboard wind-down` needs the pinboard:operator scope, which the credential from " +
        "PINBOARD_OPERATOR_TOKEN has; so Pinboard refused the placement: its owner is outside the credential's " +
        "namespaces, hostnames or envs",
    ]);
  });

  it("adds nothing to errors whose string says it all", () => {
    const err = new HttpError(400, "invalid namespace", "GET", "http://127.0.0.1:8787/registry/overview");
    expect(explainHttpError(err, { command: workers, globals: globals(), now: NOW })).toEqual([]);
  });
});
