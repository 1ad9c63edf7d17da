import { failureText, linkOf, Problem } from './api.ts'
import { field, h, start } from './dom.ts'
import { atLeast, ROLES, type User } from './people.ts'
import type { Shell } from './shell.ts'

/** The answer to `POST /invitations`: the link to pass on is `url`. */
interface Invitation { id: string, email: string, role: string, url: string, expires_at: string }

/**
 * `Staff` (editors and above): every user with their role and status, an invitation's form
 * (editors invite contributors and authors, admins any role but owner), and for an admin each
 * user's role, suspension and removal (`PATCH`/`DELETE /users/{id}`).
 */
export function staffScreen (shell: Shell, me: User | null): HTMLElement {
  const admin = atLeast(me?.role, 'admin')
  const heading = h('h1', { tabindex: -1 }, 'Staff')
  const rows = h('tbody', {})
  const table = h('table', { class: 'staff' },
    h('caption', {}, 'Everyone who writes here'),
    h('thead', {}, h('tr', {}, ...['Name', 'Role', 'Status', ...(admin ? ['Actions'] : [])].map(c => h('th', { scope: 'col' }, c)))),
    rows)

  const patch = (u: User, change: Record<string, unknown>, done: string) => {
    start((async () => {
      try {
        // The user as they are now, for If-Match: a change made meanwhile is not overwritten unseen.
        const { headers } = await shell.api.call<User>('GET', `/users/${encodeURIComponent(u.id)}`)
        const etag = headers.get('etag')
        await shell.api.call('PATCH', `/users/${encodeURIComponent(u.id)}`, {
          body: JSON.stringify(change),
          headers: { 'content-type': 'application/merge-patch+json', ...(etag === null ? {} : { 'if-match': etag }) },
        })
        shell.alert(null)
        shell.say(done)
      } catch (err) {
        shell.alert(`Not changed: ${failureText(err)}`)
      }
      await load()
    })())
  }
  // Removing asks once, as deleting a post does: it cannot be undone.
  const confirm = h('dialog', { class: 'confirm', 'aria-labelledby': 'remove-title' })
  const askRemove = (u: User, from: HTMLElement) => {
    const yes = h('button', { type: 'button', class: 'danger' }, 'Remove user')
    const no = h('button', { type: 'button' }, 'Cancel')
    confirm.replaceChildren(
      h('h2', { id: 'remove-title' }, `Remove ${u.name}?`),
      h('p', {}, 'Their account ends; the posts they wrote stay, with you as their author in their place. This cannot be undone.'),
      h('div', { class: 'actions' }, yes, no))
    no.addEventListener('click', () => { confirm.close(); from.focus() })
    yes.addEventListener('click', () => { confirm.close(); remove(u) })
    confirm.showModal()
    no.focus()
  }
  const remove = (u: User) => {
    start((async () => {
      try {
        let answer = await shell.api.call('DELETE', `/users/${encodeURIComponent(u.id)}`).catch((err: unknown) => err)
        // One who wrote posts: their place in each post's authors goes to the person removing them.
        if (answer instanceof Problem && answer.code === 'USER_HAS_POSTS' && me !== null) {
          answer = await shell.api.call('DELETE', `/users/${encodeURIComponent(u.id)}?reassign_to=${encodeURIComponent(me.id)}`)
        } else if (answer instanceof Error) {
          throw answer
        }
        shell.alert(null)
        shell.say(`${u.name} removed`)
      } catch (err) {
        shell.alert(`Not removed: ${failureText(err)}`)
      }
      await load()
    })())
  }

  const rowOf = (u: User) => {
    const cells = [
      h('td', {}, u.name, u.email == null ? null : h('span', { class: 'meta' }, ` ${u.email}`)),
      h('td', {}, u.role),
      h('td', {}, h('span', { class: `badge ${u.status}` }, u.status)),
    ]
    if (admin && u.id !== me?.id && u.role !== 'owner') {
      const role = h('select', { 'aria-label': `Role of ${u.name}` }, ...ROLES.filter(r => r !== 'owner').map(r => h('option', { value: r, selected: r === u.role }, r)))
      role.addEventListener('change', () => { patch(u, { role: role.value }, `${u.name} is now ${role.value}`) })
      const suspended = u.status === 'suspended'
      cells.push(h('td', { class: 'actions' },
        role,
        h('button', {
          type: 'button',
          onclick: () => { patch(u, { status: suspended ? 'active' : 'suspended' }, suspended ? `${u.name} is active again` : `${u.name} is suspended`) },
        }, `${suspended ? 'Reinstate' : 'Suspend'} ${u.name}`),
        h('button', { type: 'button', class: 'danger', onclick: (e: Event) => { askRemove(u, e.currentTarget as HTMLElement) } }, `Remove ${u.name}`)))
    } else if (admin) {
      cells.push(h('td', {}))
    }
    return h('tr', {}, ...cells)
  }

  const load = async () => {
    const users: User[] = []
    try {
      let path: string | null = '/users?limit=100'
      while (path !== null) {
        const answer: { body: User[], headers: Headers } = await shell.api.call<User[]>('GET', path)
        users.push(...answer.body)
        path = linkOf(answer.headers.get('link'), 'next')
      }
    } catch (err) {
      shell.alert(failureText(err))
      return
    }
    rows.replaceChildren(...users.map(rowOf))
  }

  // Invitations
  const email = h('input', { type: 'email', required: true, maxlength: 320, autocomplete: 'off' })
  const invitable = ROLES.filter(r => r !== 'owner' && (admin || atLeast('author', r)))
  const role = h('select', {}, ...invitable.map(r => h('option', { value: r, selected: r === 'contributor' }, r)))
  const url = h('input', { type: 'text', readonly: true, spellcheck: 'false' })
  const urlRow = field('Invitation URL', url, 'Pass this link on: the service sends no mail. It works once, for 7 days.')
  urlRow.row.hidden = true
  const invite = h('form', { class: 'fields invite', 'aria-labelledby': 'invite-title', novalidate: true },
    h('h2', { id: 'invite-title' }, 'Invite someone'),
    field('Email', email).row,
    field('Role', role).row,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Invite')),
    urlRow.row)
  invite.addEventListener('submit', event => {
    event.preventDefault()
    shell.api.call<Invitation>('POST', '/invitations', { json: { email: email.value.trim(), role: role.value } }).then(({ body }) => {
      url.value = new URL(body.url, location.origin).href
      urlRow.row.hidden = false
      url.focus()
      url.select()
      shell.alert(null)
      shell.say(`Invitation made for ${body.email}`)
    }, (err: unknown) => {
      shell.alert(err instanceof Problem && err.code === 'EMAIL_TAKEN' ? 'Not invited: someone with this email writes here already.' : `Not invited: ${failureText(err)}`)
      email.focus()
    })
  })

  start(load())
  return h('section', { class: 'screen staff-screen' }, heading, h('div', { class: 'table-wrap' }, table), invite, confirm)
}
