import './style.css'
import { credential, endSessionOnService, refreshSession, sessionEndedWhy, sessionMarked } from './api.ts'
import { h, start } from './dom.ts'
import { editorScreen } from './editor.ts'
import { listScreen } from './list.ts'
import { createShell } from './shell.ts'
import { signInScreen } from './sign-in.ts'
import { LINK_PAGES, linkScreen } from './link-pages.ts'
import { atLeast, forgetPerson, signedInPerson, whoAmI } from './people.ts'

/**
 * The editor's page: a header (the service's name, `New post`, sign out), the live status, and one
 * screen at a time chosen by the address's fragment: `#/` the list, `#/posts/new`, `#/posts/<id>`,
 * `#/profile`, `#/staff`, `#/site` (those three loaded when first opened: the list and the editor need none of it);
 * at the pages of the links the service makes (`/admin/setup#<token>`, `/admin/invite#…`,
 * `/admin/reset#…`), that link's form.
 */
const main = document.getElementById('main')!
const nav = document.getElementById('nav')!
let signedOutWhy: string | null = null
const { shell, status, alerts } = createShell(why => {
  signedOutWhy = why
  forgetPerson()
  route()
})
document.getElementById('messages')!.append(status, alerts)

/** The save of the screen shown, for Ctrl/Cmd+S. */
let save: (() => void) | null = null

/** Which screen the address names: each a function making it, the people's screens loaded on demand. */
const SCREENS: { pattern: RegExp, open: (m: RegExpExecArray) => Promise<{ element: HTMLElement, save?: () => void }> }[] = [
  { pattern: /^#\/posts\/(new|\d+)$/, open: async m => editorScreen(shell, m[1] === 'new' ? null : Number(m[1]), signedInPerson()) },
  { pattern: /^#\/profile$/, open: async () => ({ element: (await import('./profile.ts')).profileScreen(shell) }) },
  { pattern: /^#\/staff$/, open: async () => ({ element: (await import('./staff.ts')).staffScreen(shell, signedInPerson()) }) },
  { pattern: /^#\/site$/, open: async () => ({ element: (await import('./site.ts')).siteScreen(shell, signedInPerson()) }) },
]

let routed = 0
function route (): void {
  const mine = ++routed
  save = null
  const token = credential.get()
  nav.hidden = token === null
  const link = LINK_PAGES[location.pathname]
  if (link !== undefined) {
    nav.hidden = true
    show(linkScreen(shell, link, location.hash.slice(1), () => {
      history.replaceState(null, '', '/admin#/')
      route()
    }))
  } else if (token === null) {
    // Signed in again, the screen that was open comes back (an editor with its unsaved text kept in the tab).
    show(signInScreen(shell, signedOutWhy, () => { signedOutWhy = null; forgetPerson(); route() }))
  } else {
    start((async () => {
      // Who is signed in decides what the screens offer (a contributor's Status, the Staff link).
      await whoAmI(shell.api).catch(() => null)
      if (mine !== routed) return
      drawNav()
      for (const { pattern, open } of SCREENS) {
        const m = pattern.exec(location.hash)
        if (m === null) continue
        const screen = await open(m)
        if (mine !== routed) return
        save = screen.save ?? null
        show(screen.element)
        return
      }
      show(listScreen(shell, location.hash))
    })())
  }
}

function show (screen: HTMLElement): void {
  main.replaceChildren(screen)
  // The new screen's heading takes focus, so a screen reader starts there and Tab goes on from it.
  screen.querySelector<HTMLElement>('h1')?.focus()
  document.title = `${screen.querySelector('h1')?.textContent ?? 'Editor'} · Blog Post Service`
}

/** The header's links: Profile for a person, Staff for editors and above, Site for admins. */
const people = h('span', { class: 'people' })
function drawNav (): void {
  const person = signedInPerson()
  people.replaceChildren(...(person === null
    ? []
    : [
        h('a', { href: '#/profile' }, 'Profile'),
        atLeast(person.role, 'editor') ? h('a', { href: '#/staff' }, 'Staff') : null,
        atLeast(person.role, 'admin') ? h('a', { href: '#/site' }, 'Site') : null,
      ].filter(e => e !== null)))
}

nav.append(
  h('button', { type: 'button', class: 'primary', onclick: () => { shell.go('#/posts/new') } }, 'New post'),
  people,
  h('button', {
    type: 'button',
    onclick: () => {
      // A person's session ends on the service too: its refresh cookie is refused from now on.
      if (credential.isSession()) endSessionOnService().catch(() => {})
      credential.clear()
      forgetPerson()
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

// While the tab is seen, a person's editor asks every few seconds who they are: a session the
// service ended (an admin suspended them) says so at once, not at the next save, and a role
// changed meanwhile shows in what the screens offer.
let lastRole = signedInPerson()?.role
setInterval(() => {
  if (document.visibilityState !== 'visible' || LINK_PAGES[location.pathname] !== undefined) return
  if (credential.get() === null) {
    // The session's own refresh (on its timer) was refused: the editor still shows a signed-in screen.
    if (!nav.hidden) { signedOutWhy = sessionEndedWhy() ?? 'The session ended.'; forgetPerson(); route() }
    return
  }
  if (!credential.isSession()) return
  whoAmI(shell.api, true).then(person => {
    if (person?.role !== lastRole) { lastRole = person?.role; drawNav() }
  }, () => {})
}, 4000)
// A person signed in before a reload is signed in again from the session's cookie.
if (credential.get() === null && sessionMarked() && LINK_PAGES[location.pathname] === undefined) refreshSession().finally(route).catch(() => {})
else route()
