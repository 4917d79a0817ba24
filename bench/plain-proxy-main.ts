/**
 * The plain node:http proxy (bench/plain-proxy.ts) in front of BENCH_UPSTREAM: the baseline every
 * ratio of the bench is taken against.
 */
import { startPlainProxy } from "./plain-proxy.ts";

startPlainProxy(process.env.BENCH_UPSTREAM ?? "");
