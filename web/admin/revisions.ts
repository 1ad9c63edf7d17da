import { diffLines } from 'diff'
import { Problem } from './api.ts'
import { h, when, start } from './dom.ts'
import type { Post } from './post.ts'
import type { Shell } from './shell.ts'

interface RevisionItem { number: number, title: string, status: string, editor: string, created_at: string }
interface Revision extends RevisionItem { content: string }

export interface RevisionsHost {
  postId (): number | null
  /** The ETag the writer's text is based on: a restore over a newer version is refused (412). */
  base (): string | null
  /** The text in the editor now, to compare a revision with. */
  current (): string
  restored (post: Post, etag: string | null): void
}

/**
 * The post's revisions, newest first: each can show how it differs from the text in the editor
 * (a line diff) and be restored (`Restore revision N`, no confirmation: a restore is itself a new
 * revision, so it can be undone by restoring the one before).
 */
export function revisionsPanel (shell: Shell, host: RevisionsHost): { element: HTMLElement, load: () => Promise<void> } {
  const list = h('ol', { class: 'revisions', 'aria-label': 'Revisions, newest first' })
  const shown = h('div', { class: 'revision-diff' })
  const element = h('section', { id: 'revisions-panel', class: 'panel', hidden: true, 'aria-labelledby': 'revisions-title' },
    h('h2', { id: 'revisions-title' }, 'Revisions'), list, shown)

  const showChanges = async (n: number, button: HTMLButtonElement) => {
    try {
      const { body } = await shell.api.call<Revision>('GET', `/posts/${host.postId()}/revisions/${n}`)
      const parts = diffLines(body.content, host.current())
      const same = parts.every(p => p.added !== true && p.removed !== true)
      shown.replaceChildren(
        h('h3', { id: 'diff-title', tabindex: -1 }, `Revision ${n} compared with the text in the editor`),
        h('p', { class: 'legend' }, same ? 'The content is the same.' : '', same ? null : h('del', {}, 'only in the revision'), same ? null : ' ', same ? null : h('ins', {}, 'only in the editor')),
        h('pre', { class: 'diff', tabindex: 0, 'aria-labelledby': 'diff-title' },
          ...parts.map(p => p.added === true ? h('ins', {}, p.value) : p.removed === true ? h('del', {}, p.value) : h('span', {}, p.value))))
      shown.querySelector<HTMLElement>('h3')?.focus()
    } catch (err) {
      shell.alert(err instanceof Problem ? err.detail : String(err))
      button.focus()
    }
  }

  const restore = async (n: number) => {
    try {
      const base = host.base()
      const { body, headers } = await shell.api.call<Post>('POST', `/posts/${host.postId()}/revisions/${n}/restore`, { headers: base === null ? {} : { 'if-match': base } })
      host.restored(body, headers.get('etag'))
      shell.say(`Restored revision ${n}`)
      await load()
    } catch (err) {
      shell.alert(err instanceof Problem && err.status === 412
        ? 'Not restored: someone saved this post since you opened it. Save or reload first.'
        : `Not restored: ${err instanceof Problem ? err.detail : String(err)}`)
    }
  }

  const load = async () => {
    const id = host.postId()
    if (id === null) return
    list.setAttribute('aria-busy', 'true')
    try {
      const { body } = await shell.api.call<RevisionItem[]>('GET', `/posts/${id}/revisions?limit=100`)
      list.replaceChildren(...body.map(r => {
        const changes = h('button', { type: 'button', 'aria-label': `Show changes in revision ${r.number}` }, 'Changes')
        changes.addEventListener('click', () => { start(showChanges(r.number, changes)) })
        return h('li', {},
          h('span', { class: 'revision-what' }, h('strong', {}, `Revision ${r.number}`), ` ${r.title} · ${r.status} · ${r.editor} · ${when(r.created_at)}`),
          h('span', { class: 'actions' },
            changes,
            h('button', { type: 'button', onclick: () => { start(restore(r.number)) } }, `Restore revision ${r.number}`)))
      }))
    } catch (err) {
      shell.alert(err instanceof Problem ? err.detail : String(err))
    } finally {
      list.removeAttribute('aria-busy')
    }
  }
  return { element, load }
}
