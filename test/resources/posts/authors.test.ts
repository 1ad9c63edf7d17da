import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { buildTestApp, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

const PASSWORD = 'correct horse battery staple'

function auth (token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` }
}

/** A profile without sign-in (as an import makes one): cheap, no password to hash. */
async function profile (t: TestApp, slug: string, name = slug): Promise<{ id: string, slug: string }> {
  const id = randomBytes(16).toString('base64url')
  await t.store.transaction(async uow => { await uow.identity.insertUser({ id, email: null, name, slug, role: 'author', status: 'inactive', passwordHash: null }, new Date()) })
  return { id, slug }
}

for (const kind of await storeKinds()) {
  describe(`posts and their authors [${kind}]`, () => {
    let t: TestApp
    const people: Record<'owner' | 'editor' | 'author' | 'contributor', { access: string, slug: string, id: string }> = {} as never
    before(async () => {
      t = await buildTestApp(kind, { RATE_LIMIT_MAX: '0' })
      const setup = await t.request({ method: 'POST', url: '/setup', payload: { token: t.context.services.identity.setupToken, name: 'Olive Owner', email: 'owner@example.com', password: PASSWORD } })
      assert.equal(setup.statusCode, 201, setup.body)
      people.owner = { access: setup.json().access_token, slug: setup.json().user.slug, id: setup.json().user.id }
      for (const role of ['editor', 'author', 'contributor'] as const) {
        const invite = await t.request({ method: 'POST', url: '/invitations', headers: auth(people.owner.access), payload: { email: `${role}@example.com`, role } })
        const accepted = await t.request({ method: 'POST', url: '/invitations/accept', payload: { token: invite.json().token, name: `${role[0]!.toUpperCase()}${role.slice(1)} Person`, password: PASSWORD } })
        assert.equal(accepted.statusCode, 201, accepted.body)
        people[role] = { access: accepted.json().access_token, slug: accepted.json().user.slug, id: accepted.json().user.id }
      }
    })

    const create = async (who: keyof typeof people, payload: Record<string, unknown>) =>
      await t.request({ method: 'POST', url: '/posts', headers: auth(people[who].access), payload: { content: 'Text', ...payload } })

    it('a person\'s post is theirs: `authors` is [their slug] and `author` its first', async () => {
      const res = await create('author', { title: 'Mine' })
      assert.equal(res.statusCode, 201, res.body)
      assert.deepEqual(res.json().authors, [people.author.slug])
      assert.equal(res.json().author, people.author.slug)
      assert.deepEqual(res.json().authors, (await t.request({ method: 'GET', url: `/posts/${res.json().id}` })).json().authors)
    })

    it('only an editor or above names others; an unknown slug is 422 UNKNOWN_AUTHOR; 1 to 10 distinct authors, from both sides', async () => {
      const forbidden = await create('author', { title: 'Two of us', authors: [people.author.slug, people.editor.slug] })
      assert.equal(forbidden.statusCode, 403)
      assert.equal(forbidden.json().code, 'ROLE_FORBIDS')
      assert.match(forbidden.json().detail, /editor/)
      const own = await create('author', { title: 'Me alone', authors: [people.author.slug] })
      assert.equal(own.statusCode, 201, 'a person may name just themselves')

      const unknown = await create('editor', { title: 'Who?', authors: [people.author.slug, 'nobody-here'] })
      assert.equal(unknown.statusCode, 422)
      assert.equal(unknown.json().code, 'UNKNOWN_AUTHOR')
      assert.deepEqual(unknown.json().errors.map((e: { field: string, code: string }) => [e.field, e.code]), [['authors/1', 'UNKNOWN_AUTHOR']])

      const ten = [people.author.slug, people.editor.slug]
      for (let i = 0; ten.length < 10; i++) ten.push((await profile(t, `writer-${kind}-${i}`)).slug)
      const atLimit = await create('editor', { title: 'Ten hands', authors: ten })
      assert.equal(atLimit.statusCode, 201, atLimit.body)
      assert.deepEqual(atLimit.json().authors, ten)
      assert.equal(atLimit.json().author, people.author.slug)
      const eleven = await create('editor', { title: 'Eleven hands', authors: [...ten, people.owner.slug] })
      assert.equal(eleven.statusCode, 422)
      assert.equal(eleven.json().errors[0].field, 'authors')
      const twice = await create('editor', { title: 'Twice', authors: [people.author.slug, people.author.slug] })
      assert.equal(twice.statusCode, 422)
      const none = await create('editor', { title: 'Nobody', authors: [] })
      assert.equal(none.statusCode, 422)
      assert.equal(none.json().errors[0].code, 'TOO_SHORT')
    })

    it('every listed author counts as the post\'s: a co-author edits it, sees the draft and its revisions, `?author=` finds it', async () => {
      const draft = await create('editor', { title: 'Shared draft', status: 'draft', authors: [people.editor.slug, people.contributor.slug] })
      assert.equal(draft.statusCode, 201, draft.body)
      const id = draft.json().id
      const byCoAuthor = await t.request({ method: 'PATCH', url: `/posts/${id}`, headers: { ...auth(people.contributor.access), 'content-type': 'application/merge-patch+json' }, payload: { title: 'Shared draft, edited' } })
      assert.equal(byCoAuthor.statusCode, 200, byCoAuthor.body)
      assert.deepEqual(byCoAuthor.json().authors, [people.editor.slug, people.contributor.slug], 'a patch of other members keeps the authors')
      const reorder = await t.request({ method: 'PATCH', url: `/posts/${id}`, headers: { ...auth(people.contributor.access), 'content-type': 'application/merge-patch+json' }, payload: { authors: [people.contributor.slug] } })
      assert.equal(reorder.json().code, 'ROLE_FORBIDS', 'a contributor does not change the list')
      const mine = await t.request({ method: 'GET', url: `/posts?author=${people.contributor.slug}&fields=id,authors`, headers: auth(people.contributor.access) })
      assert.ok(mine.json().some((p: { id: number }) => p.id === id), 'the draft is listed to its co-author, by ?author= on its second author')
      assert.equal((await t.request({ method: 'GET', url: `/posts/${id}/revisions`, headers: auth(people.contributor.access) })).statusCode, 200)
      const stranger = await t.request({ method: 'GET', url: `/posts/${id}`, headers: auth(people.author.access) })
      assert.equal(stranger.statusCode, 404, 'a draft stays hidden from someone it does not list')
      const byEditor = await t.request({ method: 'PUT', url: `/posts/${id}`, headers: auth(people.editor.access), payload: { title: 'Shared', content: 'x', status: 'draft', authors: [people.contributor.slug, people.editor.slug] } })
      assert.equal(byEditor.statusCode, 200, byEditor.body)
      assert.equal(byEditor.json().author, people.contributor.slug, '`author` follows the first of `authors`')
    })

    it('a post no person wrote keeps its credential\'s name and lists no one; it is sent back as read', async () => {
      const key = await t.auth('importer', ['posts:write'])
      const made = await t.request({ method: 'POST', url: '/posts', headers: key, payload: { title: 'By a key', content: '' } })
      assert.equal(made.statusCode, 201)
      assert.equal(made.json().author, 'importer')
      assert.deepEqual(made.json().authors, [])
      const { id, ...body } = made.json()
      const back = await t.request({ method: 'PUT', url: `/posts/${id}`, headers: key, payload: body })
      assert.equal(back.statusCode, 200, back.body)
      assert.equal((await t.request({ method: 'GET', url: '/posts?author=importer' })).json().length, 1)
    })

    it('GET /authors lists who has a published post, by name, with counts; /authors/{slug} 200, 404 AUTHOR_NOT_FOUND, a former slug 301', async () => {
      const list = await t.request({ method: 'GET', url: '/authors' })
      assert.equal(list.statusCode, 200)
      const authors = list.json()
      const names = authors.map((a: { name: string }) => a.name)
      assert.deepEqual(names, [...names].sort((a: string, b: string) => a < b ? -1 : 1))
      const author = authors.find((a: { slug: string }) => a.slug === people.author.slug)
      assert.equal(author.post_count, 3)
      assert.deepEqual(Object.keys(author).sort(), ['_links', 'avatar', 'bio', 'name', 'post_count', 'slug', 'website'])
      assert.equal(author._links.posts.href.endsWith(`/posts?author=${people.author.slug}`), true)
      assert.ok(!authors.some((a: { slug: string }) => a.slug === people.owner.slug), 'no published post: not an author')

      const one = await t.request({ method: 'GET', url: `/authors/${people.author.slug}` })
      assert.equal(one.statusCode, 200)
      assert.equal(one.json().post_count, 3)
      assert.equal((await t.request({ method: 'GET', url: '/authors/no-such-one' })).json().code, 'AUTHOR_NOT_FOUND')
      assert.equal((await t.request({ method: 'GET', url: `/authors/${people.owner.slug}` })).json().code, 'AUTHOR_NOT_FOUND')

      const renamed = await t.request({ method: 'PATCH', url: '/users/me', headers: { ...auth(people.author.access), 'content-type': 'application/merge-patch+json' }, payload: { slug: 'the-author' } })
      assert.equal(renamed.statusCode, 200, renamed.body)
      const moved = await t.request({ method: 'GET', url: `/authors/${people.author.slug}` })
      assert.equal(moved.statusCode, 301)
      assert.ok(String(moved.headers.location).endsWith('/authors/the-author'))
      const posts = (await t.request({ method: 'GET', url: '/posts?author=the-author&fields=id,author,authors' })).json()
      assert.equal(posts.length, 3, 'the posts name the author by the new slug')
      assert.ok(posts.every((p: { authors: string[] }) => p.authors.includes('the-author') && !p.authors.includes(people.author.slug)))
      people.author.slug = 'the-author'
    })

    it('feeds carry every author by name, with their page', async () => {
      const feed = (await t.request({ method: 'GET', url: '/feed.json' })).json()
      const ten = feed.items.find((i: { title: string }) => i.title === 'Ten hands')
      assert.equal(ten.authors.length, 10)
      assert.equal(ten.authors[0].name, 'Author Person')
      assert.ok(ten.authors[0].url.endsWith('/authors/the-author'))
      const atom = (await t.request({ method: 'GET', url: '/feed.atom' })).body
      assert.match(atom, /<author><name>Editor Person<\/name><uri>[^<]+\/authors\/[a-z-]+<\/uri><\/author>/)
    })

    it('deleting a user who authors posts needs reassign_to (409 USER_HAS_POSTS); then their place goes to that user', async () => {
      const owner = auth(people.owner.access)
      const refused = await t.request({ method: 'DELETE', url: `/users/${people.contributor.id}`, headers: owner })
      assert.equal(refused.statusCode, 409)
      assert.equal(refused.json().code, 'USER_HAS_POSTS')
      const done = await t.request({ method: 'DELETE', url: `/users/${people.contributor.id}?reassign_to=${people.editor.id}`, headers: owner })
      assert.equal(done.statusCode, 204, done.body)
      const shared = (await t.request({ method: 'GET', url: `/posts?author=${people.editor.slug}&status=draft&fields=title,author,authors`, headers: owner })).json()
      const post = shared.find((p: { title: string }) => p.title === 'Shared')
      assert.deepEqual(post.authors, [people.editor.slug], 'the contributor\'s place went to the editor, listed once')
      assert.equal(post.author, people.editor.slug)
    })
  })
}
