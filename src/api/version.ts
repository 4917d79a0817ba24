/** Pinboard's version, as package.json states it (a test keeps the two equal). */
export const PINBOARD_VERSION = "0.1.0";
