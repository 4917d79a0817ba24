/** A few DOM helpers: elements built from data, and updates that leave unchanged parts alone (no flicker). */

type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | ((e: Event) => void)> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === "function") el.addEventListener(name.replace(/^on/, ""), value);
    else if (value === true) el.setAttribute(name, "");
    else if (value !== false) el.setAttribute(name, value);
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

/**
 * Replaces `host`'s content only when what it would show changed (keyed by `key`). A focused
 * control inside it that carries `data-focus` is focused again in the new content, so a refresh
 * never throws a keyboard user out of the table.
 */
export function render(host: HTMLElement, key: string, build: () => Node): void {
  if (host.dataset.key === key) return;
  host.dataset.key = key;
  const active = document.activeElement;
  const focus = active instanceof HTMLElement && host.contains(active) ? active.dataset.focus : undefined;
  host.replaceChildren(build());
  if (focus) host.querySelector<HTMLElement>(`[data-focus="${CSS.escape(focus)}"]`)?.focus();
}

export function table(headers: string[], rows: Array<Array<Node | string>>, caption: string): HTMLTableElement {
  return h(
    "table",
    {},
    h("caption", { class: "visually-hidden" }, caption),
    h("thead", {}, h("tr", {}, ...headers.map((name) => h("th", { scope: "col" }, name)))),
    h(
      "tbody",
      {},
      ...rows.map((cells) => h("tr", {}, ...cells.map((cell, i) => h("td", { "data-label": headers[i] ?? "" }, cell)))),
    ),
  );
}

/** A term and its value of a definition list (<dt>, <dd>). */
export function term(name: string, value: Node | string): [HTMLElement, HTMLElement] {
  return [h("dt", {}, name), h("dd", {}, value)];
}
