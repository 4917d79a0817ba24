/** package.json's `config.nodeFlags`, one flag per element (bin/node-flags.mjs). */
export declare function startNodeFlags(): string[];
