/**
 * The layering docs/architecture.md draws, checked by dependency-cruiser over the import graph
 * (type-only imports included): `npx depcruise src` prints the violations, and
 * test/layering.unit.test.ts runs the same rules and holds them.
 *
 *   - each folder of src has a layer and imports only folders of a lower one (LAYERS), so no
 *     folder cycle can form; folders of one layer never import each other;
 *   - the runtime-neutral core (every folder but src/runtime/node, src/cli and src/pinned, and the
 *     entries index.ts and cloudflare.ts) imports no `node:*` module (Biome's noProcessGlobal
 *     keeps `process` out of the same files);
 *   - src/contract imports nothing else of the project;
 *   - the worker library (src/pinned) imports only src/contract, and nothing else imports it.
 */

/** Each folder of src (runtime adapters by their own folder) and its layer. */
export const LAYERS = {
  contract: 0,
  config: 1,
  log: 1,
  metrics: 1,
  redis: 2,
  errors: 3,
  http: 4,
  fleet: 4,
  auth: 5,
  outbound: 5,
  deps: 6,
  audit: 7,
  registry: 8,
  placement: 9,
  "data-plane": 10,
  operator: 10,
  sweeper: 10,
  api: 11,
  console: 12,
  app: 13,
  "runtime/node": 14,
  "runtime/cloudflare": 14,
  cli: 15,
};

/** The files at the root of src: the three entries, above every folder. */
export const ENTRIES = ["src/index.ts", "src/node.ts", "src/cloudflare.ts"];

/** Where `node:*` may be imported: the Node adapter, the CLI, the Node entry and the worker library. */
const NODE_SIDE = ["src/runtime/node/", "src/cli/", "src/pinned/", "src/node.ts"];

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
const folderPath = (folder) => `^src/${escape(folder)}/`;

function layerRules() {
  return Object.entries(LAYERS).map(([folder, layer]) => {
    const sameOrHigher = Object.entries(LAYERS)
      .filter(([other, otherLayer]) => other !== folder && otherLayer >= layer)
      .map(([other]) => folderPath(other));
    return {
      name: `layer:${folder}`,
      comment: `src/${folder} (layer ${layer}) imports only folders of a lower layer`,
      severity: "error",
      from: { path: folderPath(folder) },
      to: { path: [...sameOrHigher, ...ENTRIES.map((entry) => `^${escape(entry)}$`)] },
    };
  });
}

export default {
  forbidden: [
    ...layerRules(),
    {
      name: "core-imports-node",
      comment: "the runtime-neutral core imports no node:* module",
      severity: "error",
      from: { path: "^src/", pathNot: NODE_SIDE.map((path) => `^${escape(path)}`) },
      to: { dependencyTypes: ["core"] },
    },
    {
      name: "contract-stands-alone",
      comment: "src/contract imports nothing else of the project",
      severity: "error",
      from: { path: "^src/contract/" },
      to: { path: "^src/", pathNot: "^src/contract/" },
    },
    {
      name: "pinned-uses-contract-only",
      comment: "the worker library imports only src/contract",
      severity: "error",
      from: { path: "^src/pinned/" },
      to: { path: "^src/", pathNot: ["^src/pinned/", "^src/contract/"] },
    },
    {
      name: "nothing-imports-pinned",
      comment: "nothing else in src imports the worker library",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/pinned/" },
      to: { path: "^src/pinned/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    parser: "swc",
    tsConfig: { fileName: "tsconfig.json" },
  },
};
