/** The package's version (Pinboard's and the worker library's), as package.json states it (test/api/openapi.test.ts keeps the two equal). */
export const PINBOARD_VERSION = "0.1.0";
