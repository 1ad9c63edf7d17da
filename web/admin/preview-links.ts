import { Problem } from './api.ts'
import { h, when } from './dom.ts'
import type { Shell } from './shell.ts'

interface PreviewLink { id: string | number, url?: string, expires_at: string, revision: number | null, created_at: string }

/**
 * Preview links: `Preview link` makes one (valid a week) and shows its address in the read-only
 * `Preview URL` to copy; the live links are listed, each with a button revoking it. The service
 * keeps only a hash of a link's token, so its address is shown once, when it is made.
 */
export function previewLinksPanel (shell: Shell, postId: () => number | null): { element: HTMLElement, make: () => Promise<void> } {
  const url = h('input', { id: 'preview-url', type: 'text', readonly: true, spellcheck: 'false' })
  const copy = h('button', { type: 'button', 'aria-label': 'Copy preview URL' }, 'Copy')
  const list = h('ul', { class: 'links', 'aria-label': 'Live preview links' })
  const element = h('section', { class: 'panel', hidden: true, 'aria-labelledby': 'links-title' },
    h('h2', { id: 'links-title' }, 'Preview links'),
    h('div', { class: 'row' }, h('label', { for: 'preview-url' }, 'Preview URL'), h('div', { class: 'inline' }, url, copy),
      h('p', { class: 'hint' }, 'Anyone with this address can read the post as it is now, without signing in, until the link expires or is revoked.')),
    list)

  copy.addEventListener('click', () => {
    url.select()
    navigator.clipboard.writeText(url.value).then(() => { shell.say('Copied') }, () => { shell.say('Selected: copy it with Ctrl+C') })
  })

  const load = async () => {
    try {
      const { body } = await shell.api.call<PreviewLink[]>('GET', `/posts/${postId()}/preview-links`)
      list.replaceChildren(...body.map(l => h('li', {},
        h('span', {}, `Made ${when(l.created_at)}, expires ${when(l.expires_at)}${l.revision === null ? '' : `, revision ${l.revision}`}`),
        h('button', {
          type: 'button',
          'aria-label': `Revoke the preview link made ${when(l.created_at)}`,
          onclick: () => {
            shell.api.call('DELETE', `/posts/${postId()}/preview-links/${encodeURIComponent(String(l.id))}`).then(async () => {
              shell.say('Preview link revoked')
              await load()
            }, (err: unknown) => { shell.alert(err instanceof Problem ? err.detail : String(err)) })
          },
        }, 'Revoke'))))
    } catch (err) {
      shell.alert(err instanceof Problem ? err.detail : String(err))
    }
  }

  const make = async () => {
    try {
      const { body } = await shell.api.call<PreviewLink>('POST', `/posts/${postId()}/preview-links`, { json: {} })
      element.hidden = false
      url.value = new URL(body.url ?? '', location.origin).href
      url.focus()
      url.select()
      shell.say('Preview link made')
      await load()
    } catch (err) {
      shell.alert(`No preview link: ${err instanceof Problem ? err.detail : String(err)}`)
    }
  }
  return { element, make }
}
