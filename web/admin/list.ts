import { linkOf, Problem } from './api.ts'
import { h, when, start } from './dom.ts'
import type { Shell } from './shell.ts'

interface Row { id: number, title: string, status: string, tags?: string[], updated_at: string }

const STATUSES = ['draft', 'scheduled', 'published', 'archived']
const PAGE = 20

/** The query of the list, kept in the address (`#/?q=…&status=…&tag=…`) so that Back returns to it. */
function queryOf (hash: string): URLSearchParams {
  const i = hash.indexOf('?')
  return new URLSearchParams(i < 0 ? '' : hash.slice(i + 1))
}

/**
 * The list of posts: `Search posts`, filters by status and tag, and paging by the cursors of the
 * `Link` header (`next`, `prev`). Each post is a link with its title to its editor.
 */
export function listScreen (shell: Shell, hash: string): HTMLElement {
  const initial = queryOf(hash)
  const search = h('input', { id: 'search', type: 'search', value: initial.get('q') ?? '', autocomplete: 'off' })
  const status = h('select', { id: 'status-filter' },
    h('option', { value: '' }, 'Any status'),
    ...STATUSES.map(s => h('option', { value: s, selected: initial.get('status') === s }, s)))
  const tag = h('input', { id: 'tag-filter', type: 'text', value: initial.get('tag') ?? '', list: 'tag-filter-list', autocomplete: 'off' })
  const tagList = h('datalist', { id: 'tag-filter-list' })
  const items = h('ul', { class: 'posts', 'aria-labelledby': 'list-title' })
  const empty = h('p', { class: 'empty', hidden: true }, 'No posts match.')
  const prev = h('button', { type: 'button', disabled: true }, 'Previous page')
  const next = h('button', { type: 'button', disabled: true }, 'Next page')
  const heading = h('h1', { id: 'list-title', tabindex: -1 }, 'Posts')

  let asked = 0
  let links: { next: string | null, prev: string | null } = { next: null, prev: null }
  const firstPage = () => {
    const p = new URLSearchParams({ fields: 'id,title,status,tags,updated_at', limit: String(PAGE) })
    if (search.value.trim() !== '') p.set('q', search.value.trim())
    if (status.value !== '') p.set('status', status.value)
    if (tag.value.trim() !== '') p.set('tag', tag.value.trim())
    return `/posts?${p.toString()}`
  }
  const load = async (path: string) => {
    const mine = ++asked
    items.setAttribute('aria-busy', 'true')
    try {
      const { body, headers } = await shell.api.call<Row[]>('GET', path)
      if (mine !== asked) return
      items.replaceChildren(...body.map(row => h('li', {},
        h('a', { href: `#/posts/${row.id}` }, row.title),
        h('span', { class: `badge ${row.status}` }, row.status),
        h('span', { class: 'meta' }, `updated ${when(row.updated_at)}`),
        (row.tags ?? []).length > 0 ? h('span', { class: 'meta' }, (row.tags ?? []).join(', ')) : null)))
      empty.hidden = body.length > 0
      links = { next: linkOf(headers.get('link'), 'next'), prev: linkOf(headers.get('link'), 'prev') }
      next.disabled = links.next === null
      prev.disabled = links.prev === null
      shell.alert(null)
    } catch (err) {
      if (mine === asked) shell.alert(err instanceof Problem ? err.detail : String(err))
    } finally {
      if (mine === asked) items.removeAttribute('aria-busy')
    }
  }
  const refilter = () => {
    const p = new URLSearchParams()
    if (search.value.trim() !== '') p.set('q', search.value.trim())
    if (status.value !== '') p.set('status', status.value)
    if (tag.value.trim() !== '') p.set('tag', tag.value.trim())
    const q = p.toString()
    history.replaceState(null, '', `#/${q === '' ? '' : `?${q}`}`)
    start(load(firstPage()))
  }
  let typing: ReturnType<typeof setTimeout> | undefined
  const soon = () => { clearTimeout(typing); typing = setTimeout(refilter, 250) }
  search.addEventListener('input', soon)
  tag.addEventListener('input', soon)
  status.addEventListener('change', refilter)
  next.addEventListener('click', () => { if (links.next !== null) start(load(links.next).then(() => { heading.focus() })) })
  prev.addEventListener('click', () => { if (links.prev !== null) start(load(links.prev).then(() => { heading.focus() })) })
  shell.api.call<{ name: string }[]>('GET', '/tags?limit=50').then(({ body }) => {
    tagList.replaceChildren(...body.map(t => h('option', { value: t.name })))
  }, () => {})
  start(load(firstPage()))

  return h('section', { class: 'screen' },
    heading,
    h('form', { class: 'filters', role: 'search', 'aria-label': 'Find posts', onsubmit: (e: Event) => { e.preventDefault(); refilter() } },
      h('div', { class: 'row grow' }, h('label', { for: 'search' }, 'Search posts'), search),
      h('div', { class: 'row' }, h('label', { for: 'status-filter' }, 'Filter by status'), status),
      h('div', { class: 'row' }, h('label', { for: 'tag-filter' }, 'Filter by tag'), tag, tagList)),
    items,
    empty,
    h('nav', { class: 'pager', 'aria-label': 'Pages' }, prev, next))
}
