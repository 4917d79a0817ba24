import { startEmbeddedRedis } from "./src/node/embedded-redis.ts";
const s = await startEmbeddedRedis();
console.log(s.url);
await new Promise((r) => setTimeout(r, 12000));
await s.stop();
