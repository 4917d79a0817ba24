import type { ICruiseOptions, IForbiddenRuleType } from "dependency-cruiser";

/** The types of .dependency-cruiser.mjs, for test/layering.unit.test.ts. */
export declare const LAYERS: Readonly<Record<string, number>>;
export declare const ENTRIES: readonly string[];
declare const configuration: { forbidden: IForbiddenRuleType[]; options: ICruiseOptions };
export default configuration;
