type Child = Node | string | null | undefined | false
type Attr = string | number | boolean | null | undefined | ((event: never) => void)

/**
 * Makes an element: attributes by name (`true` for a boolean one; `null`, `undefined` and `false`
 * leave it out), listeners as `on<event>`, then the children. Never a `style` attribute: the page's
 * Content-Security-Policy refuses inline styles, so looks live in style.css.
 */
export function h<K extends keyof HTMLElementTagNameMap> (tag: K, attrs: Record<string, Attr> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') el.addEventListener(name.slice(2), value as EventListener)
    else if (value === true) el.setAttribute(name, '')
    else if (value !== false && value !== null && value !== undefined) el.setAttribute(name, String(value))
  }
  el.append(...children.filter((c): c is Node | string => c !== null && c !== undefined && c !== false))
  return el
}

let ids = 0
/** An id unique in the page, for labels and descriptions. */
export function uid (prefix: string): string {
  return `${prefix}-${++ids}`
}

/** A labelled form control with a place for its error under it. */
export function field (label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): {
  readonly row: HTMLElement
  readonly error: HTMLElement
} {
  control.id ||= uid('field')
  const error = h('p', { class: 'field-error', id: `${control.id}-error`, hidden: true })
  const hintEl = hint === undefined ? null : h('p', { class: 'hint', id: `${control.id}-hint` }, hint)
  control.setAttribute('aria-describedby', [hintEl?.id, error.id].filter(Boolean).join(' '))
  const row = h('div', { class: 'row' }, h('label', { for: control.id }, label), control, hintEl, error)
  return { row, error }
}

/** Local date and time as an `<input type="datetime-local">` value, seconds included. */
export function toLocalInput (iso: string | null | undefined): string {
  if (iso === null || iso === undefined) return ''
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return ''
  const p = (n: number) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
}

/** A date as people here read it. */
export function when (iso: string): string {
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
}

/** Starts async work whose failures it handles itself; anything left over is a bug, shown in the console. */
export function start (work: Promise<unknown>): void {
  work.catch((err: unknown) => { console.error(err) })
}

/**
 * The service's rendered HTML as a document of its own, for reading or showing. Its only inline
 * styles (a table column's `text-align`) become classes of style.css first, in the text: even a
 * parsed document of its own counts a `style` attribute against the page's Content-Security-Policy.
 */
export function parseRendered (html: string): Document {
  const classed = html
    .replace(/ style="text-align:(left|right|center)"/g, ' class="align-$1"')
    .replace(/ style="[^"]*"/g, '')
  return new DOMParser().parseFromString(`<body>${classed}</body>`, 'text/html')
}

/**
 * Shows the service's rendered HTML in `target` (see parseRendered). The editor loads nothing from
 * another origin: an image a post links to elsewhere is shown as its description and address.
 */
export function showHtml (target: HTMLElement, html: string): void {
  const doc = parseRendered(html)
  for (const img of Array.from(doc.body.querySelectorAll('img'))) {
    const src = img.getAttribute('src') ?? ''
    if (new URL(src, location.href).origin === location.origin || /^(data|blob):/.test(src)) continue
    img.replaceWith(h('span', { class: 'elsewhere' }, `[${img.alt === '' ? 'Image' : img.alt}: ${src}, not loaded in the editor]`))
  }
  target.replaceChildren(...Array.from(doc.body.childNodes).map(n => document.adoptNode(n)))
}
