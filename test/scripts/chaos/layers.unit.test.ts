import { describe, expect, it } from "vitest";
import { checkHistory } from "../../../scripts/chaos/checker.ts";
import { countRefusals, expectedKinds, LAYERS, parseLayers } from "../../../scripts/chaos/layers.ts";
import { summarize } from "../../../scripts/chaos/report.ts";
import { history } from "./histories.ts";

describe("protection layers", () => {
  it("parses --layers in the canonical order and refuses an unknown name", () => {
    expect(parseLayers("user-fence,store-fence")).toEqual(["store-fence", "user-fence"]);
    expect(parseLayers("none")).toEqual([]);
    expect(() => parseLayers("store-fence,fence")).toThrow(/unknown layer fence/);
  });

  it("expects a zombie's read, socket message and alarm only with both is-current and lease-guard off", () => {
    expect(expectedKinds(["store-fence", "user-fence"])).toEqual([
      "zombie-read",
      "socket-stale-delivery",
      "alarm-stale-fire",
    ]);
    expect(expectedKinds(["store-fence", "user-fence", "is-current"])).toEqual([]);
    expect(expectedKinds(["store-fence", "user-fence", "lease-guard"])).toEqual([]);
    expect(expectedKinds(["lease-guard"])).toEqual(["user-db-stale-write"]);
    expect(expectedKinds([...LAYERS])).toEqual([]);
  });

  it("counts refusals per layer, zero for a layer that never refused", () => {
    const at = 1;
    const counts = countRefusals([
      { worker: "w1", layer: "user-fence", at },
      { worker: "w2", layer: "user-fence", at },
      { worker: "w1", layer: "lease-guard", at },
    ]);
    expect(counts).toEqual({ "store-fence": 0, "user-fence": 2, "is-current": 0, "lease-guard": 1 });
  });
});

describe("the summary's layer line", () => {
  it("prints each layer kept on with its refusals, and the layers off", () => {
    const refusals = [{ worker: "w1", layer: "user-fence" as const, at: 1 }];
    const verdict = checkHistory(history({ layers: ["store-fence", "user-fence"], refusals }));
    expect(verdict.stats.layers?.refusals["user-fence"]).toBe(1);
    expect(summarize(verdict).split("\n")).toContain(
      "layers on (refusals): store-fence 0, user-fence 1; off: is-current, lease-guard",
    );
  });
});
