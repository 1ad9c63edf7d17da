import { credential, Problem, startSession } from './api.ts'
import { h } from './dom.ts'
import type { Shell } from './shell.ts'

interface Field {
  readonly id: string
  readonly label: string
  readonly attrs: Record<string, string | number | boolean>
  readonly hint?: string
}

const NAME: Field = { id: 'link-name', label: 'Name', attrs: { type: 'text', autocomplete: 'name', maxlength: 100 } }
const EMAIL: Field = { id: 'link-email', label: 'Email', attrs: { type: 'email', autocomplete: 'email', maxlength: 320 } }
const PASSWORD_RULE = '12 to 256 characters; not a common password.'
const PASSWORD: Field = { id: 'link-password', label: 'Password', attrs: { type: 'password', autocomplete: 'new-password', minlength: 12, maxlength: 256 }, hint: PASSWORD_RULE }

/** A page a link of the service opens (`/admin/<page>#<token>`): its form, what it sends, and what the answer does. */
interface LinkPage {
  readonly heading: string
  readonly intro: string
  readonly fields: readonly Field[]
  readonly button: string
  readonly path: string
  /** The request's members beyond the token, by field id. */
  readonly body: (value: (id: string) => string) => Record<string, unknown>
  /** A sign-in's answer starts a session; otherwise what to say once it is done. */
  readonly done: 'session' | string
  /** The words for the service's refusals of this link, by code. */
  readonly refusals: Readonly<Record<string, string>>
}

/**
 * The pages of the links the service makes, each `/admin/<page>#<token>`: the owner's set-up
 * (printed at start while the blog has no owner), an invitation, a password reset.
 */
export const LINK_PAGES: Readonly<Record<string, LinkPage>> = {
  '/admin/setup': {
    heading: 'Create the owner\'s account',
    intro: 'The blog has no owner yet. The owner may do everything, and invites the others.',
    fields: [NAME, EMAIL, PASSWORD],
    button: 'Create account',
    path: '/setup',
    body: v => ({ name: v('link-name').trim(), email: v('link-email').trim(), password: v('link-password') }),
    done: 'session',
    refusals: {
      ALREADY_SET_UP: 'The blog already has an owner: this link is used. Sign in instead.',
      SETUP_TOKEN_INVALID: 'This is not the set-up link the service printed: copy it again from its output.',
    },
  },
  '/admin/invite': {
    heading: 'Accept the invitation',
    intro: 'You were invited to write for this blog. Choose the name others will see, and a password.',
    fields: [NAME, PASSWORD],
    button: 'Accept invitation',
    path: '/invitations/accept',
    body: v => ({ name: v('link-name').trim(), password: v('link-password') }),
    done: 'session',
    refusals: { INVITATION_NOT_FOUND: 'This invitation is not valid any more (used, revoked or expired): ask for a new one.' },
  },
  '/admin/reset': {
    heading: 'Set a new password',
    intro: 'Every session of your account ends when the new password is set.',
    fields: [{ ...PASSWORD, label: 'New password' }],
    button: 'Set password',
    path: '/password-resets',
    body: v => ({ password: v('link-password') }),
    done: 'Your new password is set: sign in with it.',
    refusals: { RESET_NOT_FOUND: 'This reset link is not valid any more (used or expired): ask an admin for a new one.' },
  },
}

/** The page of `spec` for the link's `token`; `done` opens the editor (signed in, or at its sign-in). */
export function linkScreen (shell: Shell, spec: LinkPage, token: string, done: () => void): HTMLElement {
  const heading = h('h1', { tabindex: -1, id: 'link-title' }, spec.heading)
  const form = h('form', { class: 'sign-in', 'aria-labelledby': 'link-title' },
    h('p', {}, spec.intro),
    ...spec.fields.map(f => h('div', { class: 'row' },
      h('label', { for: f.id }, f.label),
      h('input', { id: f.id, required: true, ...f.attrs, ...(f.hint === undefined ? {} : { 'aria-describedby': `${f.id}-hint` }) }),
      ...(f.hint === undefined ? [] : [h('p', { class: 'hint', id: `${f.id}-hint` }, f.hint)]))),
    h('button', { type: 'submit', class: 'primary' }, spec.button))
  const value = (id: string) => (form.querySelector<HTMLInputElement>(`#${id}`)?.value ?? '')
  form.addEventListener('submit', event => {
    event.preventDefault()
    credential.clear()
    const body = { token, ...spec.body(value), ...(spec.done === 'session' ? { refresh: 'cookie' } : {}) }
    shell.api.call<{ access_token: string, expires_in: number }>('POST', spec.path, { json: body }).then(answer => {
      shell.alert(null)
      if (spec.done === 'session') {
        startSession(answer.body)
        shell.say('Signed in')
      } else {
        shell.say(spec.done)
      }
      done()
    }, (err: unknown) => {
      const known = err instanceof Problem ? spec.refusals[err.code] : undefined
      if (known !== undefined) shell.alert(known)
      else if (err instanceof Problem && err.errors.length > 0) shell.alert(err.errors.map(e => `${e.field}: ${e.message}`).join('; '))
      else shell.alert((err as Error).message)
    })
  })
  return h('section', { class: 'screen narrow' }, heading, form)
}
