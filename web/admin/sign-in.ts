import { startAuthentication } from '@simplewebauthn/browser'
import { credential, Problem, startSession } from './api.ts'
import { h } from './dom.ts'
import type { Shell } from './shell.ts'

type SessionAnswer = { access_token: string, expires_in: number }

/**
 * `Sign in`: a person's email and password (and a two-factor `Code` when asked), or a passkey;
 * behind `Use an API key`, the key (or JWT) sign-in, tried once (`POST /render` takes any valid
 * credential) and kept for the tab. A person's session lives in the service's refresh cookie.
 */
export function signInScreen (shell: Shell, why: string | null, done: () => void): HTMLElement {
  const heading = h('h1', { tabindex: -1, id: 'sign-in-title' }, 'Sign in')
  const section = h('section', { class: 'screen narrow' }, heading)
  const started = (answer: SessionAnswer) => {
    startSession(answer)
    shell.alert(null)
    done()
  }
  const refused = (err: unknown, focus: HTMLElement) => {
    shell.alert(err instanceof Problem
      ? err.code === 'INVALID_CREDENTIALS' ? 'That email, password or code is not right.' : err.detail
      : (err as Error).message)
    focus.focus()
  }

  const personForm = (): HTMLElement => {
    const email = h('input', { id: 'sign-in-email', type: 'email', autocomplete: 'username webauthn', required: true, maxlength: 320 })
    const password = h('input', { id: 'sign-in-password', type: 'password', autocomplete: 'current-password', required: true, maxlength: 256 })
    const codeRow = h('div', { class: 'row', hidden: true })
    const form = h('form', { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
      h('div', { class: 'row' }, h('label', { for: 'sign-in-email' }, 'Email'), email),
      h('div', { class: 'row' }, h('label', { for: 'sign-in-password' }, 'Password'), password),
      codeRow,
      h('button', { type: 'submit', class: 'primary' }, 'Sign in'))
    let code: HTMLInputElement | null = null
    const signIn = (): void => {
      const body = { email: email.value.trim(), password: password.value, refresh: 'cookie', ...(code === null ? {} : { code: code.value.trim() }) }
      shell.api.call<SessionAnswer>('POST', '/sessions', { json: body }).then(a => { started(a.body) }, (err: unknown) => {
        if (err instanceof Problem && err.code === 'CODE_REQUIRED' && code === null) {
          // The account asks for a two-factor code: the form asks for it, then signs in with it.
          code = h('input', { id: 'sign-in-code', type: 'text', inputmode: 'numeric', autocomplete: 'one-time-code', required: true, maxlength: 64 })
          codeRow.replaceChildren(h('label', { for: 'sign-in-code' }, 'Code'), code, h('p', { class: 'hint' }, 'From your authenticator app, or a recovery code.'))
          codeRow.hidden = false
          form.querySelector('button[type=submit]')!.textContent = 'Verify'
          shell.alert(null)
          code.focus()
          return
        }
        refused(err, code ?? password)
      })
    }
    form.addEventListener('submit', event => { event.preventDefault(); signIn() })
    const passkey = h('button', {
      type: 'button',
      onclick: () => {
        shell.api.call<Record<string, unknown>>('POST', '/sessions/passkey/options', {})
          .then(async options => await startAuthentication({ optionsJSON: options.body as never }))
          .then(async response => await shell.api.call<SessionAnswer>('POST', '/sessions/passkey', { json: { response, refresh: 'cookie' } }))
          .then(a => { started(a.body) }, (err: unknown) => { refused(err, passkey) })
      },
    }, 'Sign in with a passkey')
    const useKey = h('button', { type: 'button', onclick: () => { show(keyForm()) } }, 'Use an API key')
    return h('div', {}, form, h('p', { class: 'other-ways' }, passkey, ' ', useKey))
  }

  const keyForm = (): HTMLElement => {
    const key = h('input', { id: 'api-key', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false', 'aria-describedby': 'api-key-hint' })
    const form = h('form', { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
      h('div', { class: 'row' },
        h('label', { for: 'api-key' }, 'API key'),
        key,
        h('p', { class: 'hint', id: 'api-key-hint' }, 'An API key (blog_…) or a JWT. It is kept in this tab only, until it closes or you sign out.')),
      h('button', { type: 'submit', class: 'primary' }, 'Sign in'))
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
    const back = h('button', { type: 'button', onclick: () => { show(personForm()) } }, 'Use your email and password')
    return h('div', {}, form, h('p', { class: 'other-ways' }, back))
  }

  const show = (body: HTMLElement): void => {
    section.replaceChildren(heading, body)
    body.querySelector<HTMLElement>('input')?.focus()
  }
  section.append(personForm())
  if (why !== null) shell.alert(`Signed out: ${why}`)
  return section
}
