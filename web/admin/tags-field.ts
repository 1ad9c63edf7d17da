import type { Api } from './api.ts'
import { h, uid, start } from './dom.ts'

export interface TagsField {
  readonly row: HTMLElement
  readonly input: HTMLInputElement
  readonly error: HTMLElement
  /** The tags, with what is typed but not yet ended counted as one. */
  value (): string[]
  set (tags: readonly string[]): void
}

/**
 * `Tags`: one text field; a comma, Enter or Tab ends the tag being typed. The tags so far stand
 * before it, each with a button removing it. Suggestions come from `GET /tags?q=<prefix>` (the
 * names in use, most used first) through the field's own list (`<datalist>`).
 */
export function tagsField (api: Api, onChange: () => void): TagsField {
  let tags: string[] = []
  const listId = uid('tag-suggestions')
  const input = h('input', { id: uid('tags'), type: 'text', list: listId, autocomplete: 'off', enterkeyhint: 'done' })
  const suggestions = h('datalist', { id: listId })
  const chips = h('ul', { class: 'chips', 'aria-label': 'Tags of this post' })
  const error = h('p', { class: 'field-error', id: `${input.id}-error`, hidden: true })
  const hint = h('p', { class: 'hint', id: `${input.id}-hint` }, 'A comma, Enter or Tab ends a tag.')
  input.setAttribute('aria-describedby', `${hint.id} ${error.id}`)

  const draw = () => {
    chips.replaceChildren(...tags.map(tag => h('li', {},
      h('span', {}, tag),
      h('button', { type: 'button', class: 'chip-remove', 'aria-label': `Remove tag ${tag}`, onclick: () => { remove(tag) } }, '×'))))
    chips.hidden = tags.length === 0
  }
  const remove = (tag: string) => {
    tags = tags.filter(t => t !== tag)
    draw()
    onChange()
    input.focus()
  }
  // Equal ignoring case is the same tag (the first spelling stays), as the service keeps them.
  const add = (text: string): boolean => {
    const parts = text.split(',').map(t => t.trim()).filter(t => t !== '')
    for (const t of parts) if (!tags.some(x => x.toLowerCase() === t.toLowerCase())) tags.push(t)
    input.value = ''
    draw()
    if (parts.length > 0) onChange()
    return parts.length > 0
  }

  let asked = 0
  const suggest = async () => {
    const q = input.value.trim()
    const mine = ++asked
    const path = q === '' ? '/tags?limit=20' : `/tags?limit=20&q=${encodeURIComponent(q)}`
    try {
      const { body } = await api.call<{ name: string }[]>('GET', path)
      if (mine !== asked) return
      suggestions.replaceChildren(...body.filter(t => !tags.some(x => x.toLowerCase() === t.name.toLowerCase())).map(t => h('option', { value: t.name })))
    } catch {
      // Suggestions are a help, never in the way: without them the field works the same.
    }
  }

  input.addEventListener('keydown', event => {
    if ((event.key === ',' || event.key === 'Enter' || event.key === 'Tab') && input.value.trim() !== '') {
      // Tab with nothing typed moves on as usual.
      event.preventDefault()
      add(input.value)
    } else if (event.key === 'Backspace' && input.value === '' && tags.length > 0) {
      remove(tags[tags.length - 1]!)
    }
  })
  input.addEventListener('input', () => {
    // A suggestion picked from the list, or a pasted "a, b, c".
    if (input.value.includes(',')) add(input.value)
    else onChange()
    start(suggest())
  })
  input.addEventListener('focus', () => { start(suggest()) }, { once: true })

  const row = h('div', { class: 'row' }, h('label', { for: input.id }, 'Tags'), chips, input, suggestions, hint, error)
  draw()
  return {
    row,
    input,
    error,
    value: () => {
      const typed = input.value.split(',').map(t => t.trim()).filter(t => t !== '' && !tags.some(x => x.toLowerCase() === t.toLowerCase()))
      return [...tags, ...typed]
    },
    set: (next: readonly string[]) => {
      tags = [...next]
      input.value = ''
      draw()
    },
  }
}
