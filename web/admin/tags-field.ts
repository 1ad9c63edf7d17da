import type { Api } from './api.ts'
import { h, uid, start } from './dom.ts'

export interface ChipsField {
  readonly row: HTMLElement
  readonly input: HTMLInputElement
  readonly error: HTMLElement
  /** The items, with what is typed but not yet ended counted as one. */
  value (): string[]
  set (items: readonly string[]): void
}

interface ChipsSpec {
  readonly label: string
  readonly hint: string
  /** Names the list of items so far, and each item's removing button (`Remove tag <x>`). */
  readonly listLabel: string
  readonly removeLabel: string
  /** An item as it is kept (a slug folded to lower case); the same key is the same item. */
  readonly fold: (text: string) => string
  readonly key: (item: string) => string
  /** Suggestions for what is typed so far: the value to put in, and a label to show beside it. */
  readonly suggest: (typed: string) => Promise<{ value: string, label?: string }[]>
}

/**
 * One text field of items (tags, authors): a comma, Enter or Tab ends the item being typed. The
 * items so far stand before it, each with a button removing it. Suggestions come through the
 * field's own list (`<datalist>`).
 */
export function chipsField (spec: ChipsSpec, onChange: () => void): ChipsField {
  let items: string[] = []
  const listId = uid('suggestions')
  const input = h('input', { id: uid('chips'), type: 'text', list: listId, autocomplete: 'off', enterkeyhint: 'done' })
  const suggestions = h('datalist', { id: listId })
  const chips = h('ul', { class: 'chips', 'aria-label': spec.listLabel })
  const error = h('p', { class: 'field-error', id: `${input.id}-error`, hidden: true })
  const hint = h('p', { class: 'hint', id: `${input.id}-hint` }, spec.hint)
  input.setAttribute('aria-describedby', `${hint.id} ${error.id}`)
  const has = (text: string) => items.some(x => spec.key(x) === spec.key(text))

  const draw = () => {
    chips.replaceChildren(...items.map(item => h('li', {},
      h('span', {}, item),
      h('button', { type: 'button', class: 'chip-remove', 'aria-label': `${spec.removeLabel} ${item}`, onclick: () => { remove(item) } }, '×'))))
    chips.hidden = items.length === 0
  }
  const remove = (item: string) => {
    items = items.filter(t => t !== item)
    draw()
    onChange()
    input.focus()
  }
  // Equal keys are the same item (the first spelling stays).
  const parts = (text: string) => text.split(',').map(t => spec.fold(t.trim())).filter(t => t !== '')
  const add = (text: string): boolean => {
    const found = parts(text)
    for (const t of found) if (!has(t)) items.push(t)
    input.value = ''
    draw()
    if (found.length > 0) onChange()
    return found.length > 0
  }

  let asked = 0
  const suggest = async () => {
    const mine = ++asked
    try {
      const offered = await spec.suggest(input.value.trim())
      if (mine !== asked) return
      suggestions.replaceChildren(...offered.filter(o => !has(o.value)).map(o => h('option', { value: o.value, label: o.label ?? null })))
    } catch {
      // Suggestions are a help, never in the way: without them the field works the same.
    }
  }

  input.addEventListener('keydown', event => {
    if ((event.key === ',' || event.key === 'Enter' || event.key === 'Tab') && input.value.trim() !== '') {
      // Tab with nothing typed moves on as usual.
      event.preventDefault()
      add(input.value)
    } else if (event.key === 'Backspace' && input.value === '' && items.length > 0) {
      remove(items[items.length - 1]!)
    }
  })
  input.addEventListener('input', () => {
    // A suggestion picked from the list, or a pasted "a, b, c".
    if (input.value.includes(',')) add(input.value)
    else onChange()
    start(suggest())
  })
  input.addEventListener('focus', () => { start(suggest()) }, { once: true })

  const row = h('div', { class: 'row' }, h('label', { for: input.id }, spec.label), chips, input, suggestions, hint, error)
  draw()
  return {
    row,
    input,
    error,
    value: () => [...items, ...parts(input.value).filter(t => !has(t))],
    set: (next: readonly string[]) => {
      items = [...next]
      input.value = ''
      draw()
    },
  }
}

/** `Tags`: suggestions from `GET /tags?q=<prefix>` (the names in use, most used first); equal ignoring case is one tag, as the service keeps them. */
export function tagsField (api: Api, onChange: () => void): ChipsField {
  return chipsField({
    label: 'Tags',
    hint: 'A comma, Enter or Tab ends a tag.',
    listLabel: 'Tags of this post',
    removeLabel: 'Remove tag',
    fold: t => t,
    key: t => t.toLowerCase(),
    suggest: async q => (await api.call<{ name: string }[]>('GET', q === '' ? '/tags?limit=20' : `/tags?limit=20&q=${encodeURIComponent(q)}`)).body.map(t => ({ value: t.name })),
  }, onChange)
}

/** `Authors` (editors and above): users' slugs, the first the primary author; suggestions from `GET /users?q=` (name or email). */
export function authorsField (api: Api, onChange: () => void): ChipsField {
  return chipsField({
    label: 'Authors',
    hint: 'Their slugs, the first the primary author. A comma, Enter or Tab ends one.',
    listLabel: 'Authors of this post',
    removeLabel: 'Remove author',
    fold: t => t.toLowerCase(),
    key: t => t,
    suggest: async q => (await api.call<{ slug: string, name: string }[]>('GET', `/users?limit=20&status=active${q === '' ? '' : `&q=${encodeURIComponent(q)}`}`)).body.map(u => ({ value: u.slug, label: u.name })),
  }, onChange)
}
