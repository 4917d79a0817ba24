/** The scripts of src/redis (lua/*.lua): the fleet claim, and the helpers every feature's scripts share. */
export * from "./fleet-claim.ts";
export * from "./run-call.ts";
export * from "./scripts.generated.ts";
