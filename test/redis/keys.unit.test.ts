import { describe, expect, it } from "vitest";
import { Keys, SINGLE_ENV, SINGLE_HOSTNAME } from "../../src/redis/keys.ts";

/**
 * Every Redis key name, spelled out: the protocol fixes the placement key
 * (`{prefix}{{bucket}}:{env}:{ns}:placements`), every key a placement script touches shares its
 * bucket's hash slot, fleet-wide keys share `{global}`, and an id's bucket is the first four bytes
 * of sha256(id) mod shards (the expected buckets were computed with Python's hashlib).
 */

const keys = new Keys("pinboard:", 16);

describe("Keys: per bucket", () => {
  it("names the placement key as the protocol fixes it", () => {
    expect(keys.placements(3, SINGLE_ENV, "/threads")).toBe("pinboard:{3}:*:/threads:placements");
    expect(keys.placements(0, "prod", "/docs")).toBe("pinboard:{0}:prod:/docs:placements");
    expect(new Keys("", 1).placements(0, "*", "/a")).toBe("{0}:*:/a:placements");
  });

  it("names the bucket's other keys in the bucket's slot", () => {
    expect([
      keys.workers(7),
      keys.workerExpiries(7),
      keys.clients(7),
      keys.bootTime(7),
      keys.epoch(7),
      keys.overwritten(7),
      keys.spaces(7),
      keys.spent(7),
      keys.ejected(7),
      keys.wakes(7),
    ]).toEqual([
      "pinboard:{7}:workers",
      "pinboard:{7}:worker-expiries",
      "pinboard:{7}:clients",
      "pinboard:{7}:boot_time",
      "pinboard:{7}:epoch",
      "pinboard:{7}:overwritten",
      "pinboard:{7}:spaces",
      "pinboard:{7}:spent",
      "pinboard:{7}:ejected",
      "pinboard:{7}:wakes",
    ]);
  });

  it("keys a namespace list by {hostname}{ns}, three keys in the scripts' order", () => {
    expect(keys.nsListKeys(2, SINGLE_HOSTNAME, "/threads")).toEqual([
      "pinboard:{2}:nsw:/threads",
      "pinboard:{2}:nse:/threads",
      "pinboard:{2}:nss:/threads",
    ]);
    expect(keys.nsWorkers(2, "api.example.com", "/threads")).toBe("pinboard:{2}:nsw:api.example.com/threads");
    expect(keys.nsExpiries(2, "api.example.com", "/threads")).toBe("pinboard:{2}:nse:api.example.com/threads");
    expect(keys.nsSummary(2, "api.example.com", "/threads")).toBe("pinboard:{2}:nss:api.example.com/threads");
    expect(keys.nsListKeysFor(5, "", ["/a", "/b"])).toEqual([
      "pinboard:{5}:nsw:/a",
      "pinboard:{5}:nse:/a",
      "pinboard:{5}:nss:/a",
      "pinboard:{5}:nsw:/b",
      "pinboard:{5}:nse:/b",
      "pinboard:{5}:nss:/b",
    ]);
    expect(keys.nsListKeysFor(5, "", [])).toEqual([]);
  });
});

describe("Keys: fleet-wide", () => {
  it("names every fleet-wide key in the {global} slot", () => {
    expect([
      keys.sessions,
      keys.sessionExpiries,
      keys.sessionOwners,
      keys.sessionOwnerChecks,
      keys.generation,
      keys.clientOwners,
      keys.hostnameBindings,
      keys.envBindings,
      keys.bindingQuarantine,
      keys.license,
      keys.members,
      keys.queue("s1"),
      keys.messageIds,
      keys.drain("client-a"),
      keys.outliers,
      keys.incarnation,
      keys.resurrectCursor,
      keys.orphanCursor,
      keys.sweeperLease,
    ]).toEqual([
      "pinboard:{global}:sessions",
      "pinboard:{global}:session-expiries",
      "pinboard:{global}:session-owners",
      "pinboard:{global}:session-owner-checks",
      "pinboard:{global}:generation",
      "pinboard:{global}:clients",
      "pinboard:{global}:bindings:hostnames",
      "pinboard:{global}:bindings:envs",
      "pinboard:{global}:bindings:quarantine",
      "pinboard:{global}:license",
      "pinboard:{global}:members",
      "pinboard:{global}:queue:s1",
      "pinboard:{global}:msgids",
      "pinboard:{global}:drain:client-a",
      "pinboard:{global}:outliers",
      "pinboard:{global}:incarnation",
      "pinboard:{global}:resurrect",
      "pinboard:{global}:orphan-cursor",
      "pinboard:{global}:sweeper",
    ]);
  });
});

describe("Keys: buckets", () => {
  it("single mode's env and hostname are * and the empty string", () => {
    expect([SINGLE_ENV, SINGLE_HOSTNAME]).toEqual(["*", ""]);
  });

  it("lists every bucket from 0 to shards - 1", () => {
    expect(new Keys("p:", 4).allBuckets()).toEqual([0, 1, 2, 3]);
    expect(new Keys("p:", 1).allBuckets()).toEqual([0]);
  });

  it("puts an id in the bucket of sha256(id)'s first four bytes mod shards", () => {
    // sha256("abc") starts ba7816bf = 3128432319.
    expect(new Keys("p:", 16).bucketOf("abc")).toBe(15);
    expect(new Keys("p:", 1024).bucketOf("abc")).toBe(703);
    expect(new Keys("p:", 1).bucketOf("abc")).toBe(0);
    expect(new Keys("p:", 16).bucketOf("thread-1")).toBe(15);
    expect(new Keys("p:", 1024).bucketOf("thread-1")).toBe(1007);
    expect(new Keys("p:", 16).bucketOf("")).toBe(2);
    expect(new Keys("p:", 1024).bucketOf("ü")).toBe(202);
    expect(new Keys("p:", 16).bucketOf("i".repeat(256))).toBe(11);
    expect(new Keys("p:", 1024).bucketOf("x".repeat(5000))).toBe(4);
  });
});
