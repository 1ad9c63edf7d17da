import './style.css'
import { credential, endSessionOnService, refreshSession, sessionMarked } from './api.ts'
import { h } from './dom.ts'
import { editorScreen } from './editor.ts'
import { listScreen } from './list.ts'
import { createShell } from './shell.ts'
import { signInScreen } from './sign-in.ts'
import { LINK_PAGES, linkScreen } from './link-pages.ts'

/**
 * The editor's page: a header (the service's name, `New post`, sign out), the live status, and one
 * screen at a time chosen by the address's fragment: `#/` the list, `#/posts/new`, `#/posts/<id>`;
 * at the pages of the links the service makes (`/admin/setup#<token>`, `/admin/invite#…`,
 * `/admin/reset#…`), that link's form.
 */
const main = document.getElementById('main')!
const nav = document.getElementById('nav')!
let signedOutWhy: string | null = null
const { shell, status, alerts } = createShell(why => {
  signedOutWhy = why
  route()
})
document.getElementById('messages')!.append(status, alerts)

/** The save of the screen shown, for Ctrl/Cmd+S. */
let save: (() => void) | null = null

function route (): void {
  save = null
  const token = credential.get()
  nav.hidden = token === null
  let screen: HTMLElement
  const link = LINK_PAGES[location.pathname]
  if (link !== undefined) {
    nav.hidden = true
    screen = linkScreen(shell, link, location.hash.slice(1), () => {
      history.replaceState(null, '', '/admin#/')
      route()
    })
  } else if (token === null) {
    // Signed in again, the screen that was open comes back (an editor with its unsaved text kept in the tab).
    screen = signInScreen(shell, signedOutWhy, () => { signedOutWhy = null; route() })
  } else {
    const m = /^#\/posts\/(new|\d+)$/.exec(location.hash)
    if (m !== null) {
      const editor = editorScreen(shell, m[1] === 'new' ? null : Number(m[1]))
      save = editor.save
      screen = editor.element
    } else {
      screen = listScreen(shell, location.hash)
    }
  }
  main.replaceChildren(screen)
  // The new screen's heading takes focus, so a screen reader starts there and Tab goes on from it.
  screen.querySelector<HTMLElement>('h1')?.focus()
  document.title = `${screen.querySelector('h1')?.textContent ?? 'Editor'} · Blog Post Service`
}

nav.append(
  h('button', { type: 'button', class: 'primary', onclick: () => { shell.go('#/posts/new') } }, 'New post'),
  h('button', {
    type: 'button',
    onclick: () => {
      // A person's session ends on the service too: its refresh cookie is refused from now on.
      if (credential.isSession()) endSessionOnService().catch(() => {})
      credential.clear()
      signedOutWhy = null
      shell.alert(null)
      shell.say('Signed out')
      route()
    },
  }, 'Sign out'))

document.addEventListener('keydown', event => {
  if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === 's' && save !== null) {
    event.preventDefault()
    save()
  }
})
window.addEventListener('hashchange', route)
// A person signed in before a reload is signed in again from the session's cookie.
if (credential.get() === null && sessionMarked() && LINK_PAGES[location.pathname] === undefined) refreshSession().finally(route).catch(() => {})
else route()
