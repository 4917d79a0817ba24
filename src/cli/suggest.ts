import { editDistance } from "../config/edit-distance.ts";
import { COMMANDS, type CommandName } from "./usage.ts";

/** Typos this far (in single-character edits) from a command still suggest it. */
const MAX_EDITS = 2;
/** A shorter prefix ("s", "w") names too many commands to be worth a guess. */
const MIN_PREFIX = 2;

/**
 * The commands an unknown one most likely meant: those it is a prefix of, or within two edits of
 * (case-insensitive), the closest ones only. Empty when nothing is close, and for several words.
 */
export function suggestCommands(typed: string): CommandName[] {
  const input = typed.trim().toLowerCase();
  if (input === "" || /\s/.test(input)) return [];
  const scored = COMMANDS.map((command) => ({
    command,
    edits: input.length >= MIN_PREFIX && command.startsWith(input) ? 0 : editDistance(input, command),
  })).filter(({ edits }) => edits <= MAX_EDITS);
  const best = Math.min(...scored.map(({ edits }) => edits));
  return scored.filter(({ edits }) => edits === best).map(({ command }) => command);
}

/** `unknown command "x"`, with "; did you mean `y`?" when a command is close. */
export function unknownCommandMessage(typed: string): string {
  const suggestions = suggestCommands(typed).map((command) => `\`${command}\``);
  const message = `unknown command ${JSON.stringify(typed)}`;
  if (suggestions.length === 0) return message;
  const last = suggestions.pop()!;
  const options = suggestions.length === 0 ? last : `${suggestions.join(", ")} or ${last}`;
  return `${message}; did you mean ${options}?`;
}
