import { credential, Problem } from './api.ts'
import { h } from './dom.ts'
import type { Shell } from './shell.ts'

/** `API key` and `Sign in`: the credential is tried once (`POST /render` takes any valid one) and kept for the tab. */
export function signInScreen (shell: Shell, why: string | null, done: () => void): HTMLElement {
  const key = h('input', { id: 'api-key', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false', 'aria-describedby': 'api-key-hint' })
  const heading = h('h1', { tabindex: -1 }, 'Sign in')
  const form = h('form', { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
    h('div', { class: 'row' },
      h('label', { for: 'api-key' }, 'API key'),
      key,
      h('p', { class: 'hint', id: 'api-key-hint' }, 'An API key (blog_…) or a JWT. It is kept in this tab only, until it closes or you sign out.')),
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'))
  heading.id = 'sign-in-title'
  form.addEventListener('submit', event => {
    event.preventDefault()
    const token = key.value.trim()
    if (token === '') return
    credential.set(token)
    shell.api.call('POST', '/render', { json: { content: '' } }).then(() => {
      shell.alert(null)
      done()
    }, (err: unknown) => {
      credential.clear()
      shell.alert(err instanceof Problem && err.status === 401 ? 'That key was not accepted. Check it and try again.' : (err as Error).message)
      key.focus()
    })
  })
  if (why !== null) shell.alert(`Signed out: ${why}`)
  return h('section', { class: 'screen narrow' }, heading, form)
}
