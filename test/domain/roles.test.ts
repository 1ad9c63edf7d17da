import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import sharp from 'sharp'
import { type Role, ROLE_ACTIONS, type RoleAction, ROLES } from '../../src/domain/roles.ts'
import { buildTestApp, storeKinds, type TestApp } from '../helper.ts'
import { before } from '../support/hooks.ts'

/**
 * Every role against every action of the role table: each action is a few real requests that need
 * it, made by a person of each role. What to expect is read from the table and the roles' order,
 * never written down here: the least role and those after it succeed, those before it are 403
 * ROLE_FORBIDS, whose detail names the role the action needs.
 */

const PASSWORD = 'correct horse battery staple'
const MERGE = { 'content-type': 'application/merge-patch+json' }

interface Someone { access: string, id: string, slug: string }
type Attempt = (as: Someone, role: Role) => Promise<LightMyRequestResponse>

/** Whether the table lets `role` take `action`: the roles' order against the action's least role. */
function allowed (role: Role, action: RoleAction): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(ROLE_ACTIONS[action].least)
}

function auth (token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` }
}

for (const kind of await storeKinds()) {
  describe(`every role against every action of the role table [${kind}]`, () => {
    let t: TestApp
    const people = new Map<Role, Someone>()
    /** Another author, whose posts and media the others are asked to change. */
    let otto: Someone
    /** An admin the ownership is handed to (and back from). */
    let heir: Someone
    let colour = 0

    const as = (who: Someone) => auth(who.access)
    const signIn = async (email: string): Promise<Someone> => {
      const res = await t.request({ method: 'POST', url: '/sessions', payload: { email, password: PASSWORD } })
      assert.equal(res.statusCode, 201, res.body)
      const b = res.json()
      return { access: b.access_token, id: b.user.id, slug: b.user.slug }
    }
    const invite = async (role: Role, name: string): Promise<Someone> => {
      const owner = people.get('owner')!
      const inv = await t.request({ method: 'POST', url: '/invitations', headers: as(owner), payload: { email: `${name.toLowerCase()}@example.com`, role } })
      assert.equal(inv.statusCode, 201, inv.body)
      const res = await t.request({ method: 'POST', url: '/invitations/accept', payload: { token: inv.json().token, name, password: PASSWORD } })
      assert.equal(res.statusCode, 201, res.body)
      const b = res.json()
      assert.equal(b.user.role, role)
      return { access: b.access_token, id: b.user.id, slug: b.user.slug }
    }
    const post = async (who: Someone, status: 'draft' | 'published' = 'draft'): Promise<number> => {
      const res = await t.request({ method: 'POST', url: '/posts', headers: as(who), payload: { title: `By ${who.slug}`, content: 'Text.', status } })
      assert.equal(res.statusCode, 201, res.body)
      return res.json().id as number
    }
    const media = async (who: Someone): Promise<string> => {
      // A new image each time: the same bytes again are the same media.
      const image = await sharp({ create: { width: 8 + colour++, height: 8, channels: 3, background: 'teal' } }).png().toBuffer()
      const res = await t.request({ method: 'POST', url: '/media', headers: { ...as(who), 'content-type': 'image/png' }, payload: image })
      assert.equal(res.statusCode, 201, res.body)
      return res.json().id as string
    }
    let email = 0
    const freshEmail = () => `invitee-${email++}@example.com`

    /**
     * Each action of the table as the requests that need it, each with the status it answers when
     * allowed. TypeScript holds the map to every action; the test below checks it at run time too.
     */
    const ATTEMPTS: Record<RoleAction, Array<{ what: string, ok: number, attempt: Attempt }>> = {
      'posts.draft': [
        { what: 'writes a draft', ok: 201, attempt: async who => await t.request({ method: 'POST', url: '/posts', headers: as(who), payload: { title: 'A draft', content: 'Text.' } }) },
        { what: 'changes their own draft', ok: 200, attempt: async who => await t.request({ method: 'PATCH', url: `/posts/${await post(who)}`, headers: { ...as(who), ...MERGE }, payload: { title: 'Changed' } }) },
      ],
      'posts.publish': [
        { what: 'writes a post published', ok: 201, attempt: async who => await t.request({ method: 'POST', url: '/posts', headers: as(who), payload: { title: 'Out now', content: 'Text.', status: 'published' } }) },
        { what: 'writes a post scheduled', ok: 201, attempt: async who => await t.request({ method: 'POST', url: '/posts', headers: as(who), payload: { title: 'Later', content: 'Text.', status: 'scheduled', publish_at: new Date(Date.now() + 86_400_000).toISOString() } }) },
        { what: 'publishes their own draft', ok: 200, attempt: async who => await t.request({ method: 'PATCH', url: `/posts/${await post(who)}`, headers: { ...as(who), ...MERGE }, payload: { status: 'published' } }) },
        {
          what: 'changes their own post once it is published',
          ok: 200,
          attempt: async who => {
            const id = await post(who)
            const published = await t.request({ method: 'PATCH', url: `/posts/${id}`, headers: { ...as(people.get('owner')!), ...MERGE }, payload: { status: 'published' } })
            assert.equal(published.statusCode, 200, published.body)
            return await t.request({ method: 'PATCH', url: `/posts/${id}`, headers: { ...as(who), ...MERGE }, payload: { title: 'Changed once published' } })
          },
        },
      ],
      'posts.any': [
        { what: 'changes another\'s published post', ok: 200, attempt: async who => await t.request({ method: 'PATCH', url: `/posts/${await post(otto, 'published')}`, headers: { ...as(who), ...MERGE }, payload: { title: 'Edited by another' } }) },
        { what: 'deletes another\'s published post', ok: 204, attempt: async who => await t.request({ method: 'DELETE', url: `/posts/${await post(otto, 'published')}`, headers: as(who) }) },
      ],
      'media.any': [
        { what: 'changes another\'s media', ok: 200, attempt: async who => await t.request({ method: 'PATCH', url: `/media/${await media(otto)}`, headers: { ...as(who), ...MERGE }, payload: { alt: 'Described by another' } }) },
        { what: 'deletes another\'s media', ok: 204, attempt: async who => await t.request({ method: 'DELETE', url: `/media/${await media(otto)}`, headers: as(who) }) },
      ],
      'invitations.writers': [
        { what: 'invites a contributor', ok: 201, attempt: async who => await t.request({ method: 'POST', url: '/invitations', headers: as(who), payload: { email: freshEmail(), role: 'contributor' } }) },
        { what: 'invites an author', ok: 201, attempt: async who => await t.request({ method: 'POST', url: '/invitations', headers: as(who), payload: { email: freshEmail(), role: 'author' } }) },
        { what: 'lists the open invitations', ok: 200, attempt: async who => await t.request({ method: 'GET', url: '/invitations', headers: as(who) }) },
      ],
      'users.manage': [
        { what: 'invites an editor', ok: 201, attempt: async who => await t.request({ method: 'POST', url: '/invitations', headers: as(who), payload: { email: freshEmail(), role: 'editor' } }) },
        { what: 'invites an admin', ok: 201, attempt: async who => await t.request({ method: 'POST', url: '/invitations', headers: as(who), payload: { email: freshEmail(), role: 'admin' } }) },
        { what: 'changes another user', ok: 200, attempt: async (who, role) => await t.request({ method: 'PATCH', url: `/users/${otto.id}`, headers: { ...as(who), ...MERGE }, payload: { bio: `Edited by the ${role}` } }) },
        { what: 'makes a password reset link', ok: 201, attempt: async who => await t.request({ method: 'POST', url: `/users/${otto.id}/password-reset`, headers: as(who) }) },
      ],
      'ownership.transfer': [
        {
          what: 'hands the ownership over',
          ok: 200,
          attempt: async (who, role) => {
            const res = await t.request({ method: 'POST', url: `/users/${heir.id}/ownership`, headers: as(who) })
            if (res.statusCode !== 200) return res
            assert.equal(res.json().role, 'owner')
            // Handed back, so the roles are again as they were; both sign in anew (their role changed).
            heir = await signIn('hal@example.com')
            const back = await t.request({ method: 'POST', url: `/users/${who.id}/ownership`, headers: as(heir) })
            assert.equal(back.statusCode, 200, back.body)
            heir = await signIn('hal@example.com')
            people.set(role, await signIn('olive@example.com'))
            return res
          },
        },
      ],
    }

    before(async () => {
      t = await buildTestApp(kind, { RATE_LIMIT_MAX: '0' })
      const setup = await t.request({ method: 'POST', url: '/setup', payload: { token: t.context.services.identity.setupToken, name: 'Olive', email: 'olive@example.com', password: PASSWORD } })
      assert.equal(setup.statusCode, 201, setup.body)
      people.set('owner', { access: setup.json().access_token, id: setup.json().user.id, slug: setup.json().user.slug })
      for (const role of ROLES) if (role !== 'owner') people.set(role, await invite(role, `The ${role}`.replace(/\s/g, '')))
      otto = await invite('author', 'Otto')
      heir = await invite('admin', 'Hal')
    })

    it('maps every action of the table to requests', () => {
      assert.deepEqual(Object.keys(ATTEMPTS).sort(), Object.keys(ROLE_ACTIONS).sort())
      for (const [action, attempts] of Object.entries(ATTEMPTS)) assert.ok(attempts.length > 0, action)
      // Each role is allowed something another is not: the table is no one role's.
      for (const [i, role] of ROLES.entries()) if (i > 0) assert.ok(Object.keys(ROLE_ACTIONS).some(a => allowed(role, a as RoleAction) && !allowed(ROLES[i - 1]!, a as RoleAction)), role)
    })

    for (const action of Object.keys(ROLE_ACTIONS) as RoleAction[]) {
      const least = ROLE_ACTIONS[action].least
      it(`${action}: ${least} and above may, the roles before are 403 ROLE_FORBIDS`, async () => {
        for (const role of ROLES) {
          for (const { what, ok, attempt } of ATTEMPTS[action]) {
            const res = await attempt(people.get(role)!, role)
            const label = `${role} ${what} (${action}, least ${least})`
            if (allowed(role, action)) {
              assert.equal(res.statusCode, ok, `${label}: ${res.body}`)
            } else {
              assert.equal(res.statusCode, 403, `${label}: ${res.body}`)
              assert.match(String(res.headers['content-type']), /^application\/problem\+json/, label)
              const problem = res.json()
              assert.equal(problem.code, 'ROLE_FORBIDS', `${label}: ${res.body}`)
              assert.equal(problem.status, 403, label)
              // The detail names what is lacking: the role the action needs.
              assert.match(problem.detail, new RegExp(`\\b${least}`), `${label}: ${problem.detail}`)
            }
          }
        }
      })
    }

    it('a contributor cannot change their post once an editor published it; an editor changes anyone\'s draft', async () => {
      const contributor = people.get('contributor')!
      const editor = people.get('editor')!
      const id = await post(contributor)
      const edited = await t.request({ method: 'PATCH', url: `/posts/${id}`, headers: { ...as(editor), ...MERGE }, payload: { title: 'Edited by the editor' } })
      assert.equal(edited.statusCode, 200, edited.body)
      const published = await t.request({ method: 'PATCH', url: `/posts/${id}`, headers: { ...as(editor), ...MERGE }, payload: { status: 'published' } })
      assert.equal(published.statusCode, 200, published.body)
      for (const payload of [{ title: 'Mine again' }, { status: 'draft' }]) {
        const res = await t.request({ method: 'PATCH', url: `/posts/${id}`, headers: { ...as(contributor), ...MERGE }, payload })
        assert.equal(res.statusCode, 403, res.body)
        assert.equal(res.json().code, 'ROLE_FORBIDS')
      }
      const gone = await t.request({ method: 'DELETE', url: `/posts/${id}`, headers: as(contributor) })
      assert.equal(gone.json().code, 'ROLE_FORBIDS')
    })
  })
}
