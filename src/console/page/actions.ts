import { type Answer, call, explain } from "./api.ts";
import { h } from "./dom.ts";

/**
 * Operator actions, each confirmed in a dialog first and each showing the API's answer as it
 * came: the status and the JSON body.
 */

export interface Action {
  title: string;
  /** What will happen, in plain words. */
  description: string;
  path: string;
  body: Record<string, unknown>;
  /** Asks for a number of seconds first (a timed drain), put into `body.deadline`. */
  askSeconds?: string;
}

let dialog: HTMLDialogElement | null = null;

function theDialog(): HTMLDialogElement {
  if (dialog) return dialog;
  dialog = h("dialog", { id: "confirm", "aria-labelledby": "confirm-title" });
  document.body.append(dialog);
  return dialog;
}

/** Shows the dialog; resolves with the seconds entered (or null), or undefined when cancelled. */
function confirm(action: Action): Promise<number | null | undefined> {
  const d = theDialog();
  const seconds = action.askSeconds
    ? h("input", { type: "number", min: "0", step: "1", value: "300", id: "confirm-seconds", required: true })
    : null;
  return new Promise((resolve) => {
    const done = (value: number | null | undefined) => {
      d.close();
      resolve(value);
    };
    d.replaceChildren(
      h(
        "form",
        {
          method: "dialog",
          onsubmit: (e: Event) => {
            e.preventDefault();
            done(seconds ? Number(seconds.value) : null);
          },
        },
        h("h2", { id: "confirm-title" }, action.title),
        h("p", {}, action.description),
        seconds ? h("label", { for: "confirm-seconds" }, action.askSeconds!, " ", seconds) : null,
        h(
          "div",
          { class: "buttons" },
          h("button", { type: "button", onclick: () => done(undefined) }, "Cancel"),
          h("button", { type: "submit", class: "primary" }, "Confirm"),
        ),
      ),
    );
    d.onclose = () => resolve(undefined);
    d.showModal();
    (seconds ?? d.querySelector<HTMLButtonElement>("button.primary"))?.focus();
  });
}

/** Confirms, calls, and writes the answer into the page's answer region. */
export async function runAction(action: Action, answerHost: HTMLElement): Promise<Answer | undefined> {
  const seconds = await confirm(action);
  if (seconds === undefined) return undefined;
  const body = action.askSeconds ? { ...action.body, deadline: seconds } : action.body;
  const answer = await call("POST", action.path, body);
  const ok = answer.status >= 200 && answer.status < 300;
  answerHost.replaceChildren(
    h(
      "div",
      { class: ok ? "answer ok" : "answer refused" },
      h("strong", {}, `${action.title}: `),
      ok ? "done" : explain(answer),
      h("pre", {}, `POST ${action.path} ${JSON.stringify(body)}\n→ ${answer.status} ${JSON.stringify(answer.body)}`),
    ),
  );
  return answer;
}
