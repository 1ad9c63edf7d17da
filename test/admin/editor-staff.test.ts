import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { cspViolations, editorMissing, type EditorWorld, seriousViolations, signInAs, startEditorWorld } from './browser.ts'
import { before } from '../support/hooks.ts'

const OWNER_PASSWORD = 'a long pass phrase for olive'

describe('the Staff screen and a team\'s roles in the editor, in Chromium', { skip: editorMissing() }, () => {
  let w: EditorWorld
  let admin: { authorization: string }
  before(async () => {
    w = await startEditorWorld()
    await w.t.request({ method: 'POST', url: '/setup', payload: { token: w.t.context.services.identity.setupToken, name: 'Olive', email: 'olive@example.com', password: OWNER_PASSWORD } })
    admin = await w.t.auth('root', ['admin'])
  })

  it('invites a contributor who accepts in another browser and may only write drafts; an editor sets authors; the admin changes her role, suspends her (her open editor says so) and removes her', async () => {
    const owner = await w.open()
    await signInAs(owner.page, 'olive@example.com', OWNER_PASSWORD)
    await owner.page.getByRole('link', { name: 'Staff' }).click()
    await owner.page.getByRole('heading', { level: 1, name: 'Staff' }).waitFor()
    await owner.page.getByRole('cell', { name: 'Olive' }).waitFor()
    await owner.page.getByLabel('Email').fill('cora@example.com')
    await owner.page.getByLabel('Role', { exact: true }).selectOption('contributor')
    await owner.page.getByRole('button', { name: 'Invite' }).click()
    const url = owner.page.getByLabel('Invitation URL')
    await url.waitFor()
    assert.equal(await url.getAttribute('readonly'), '')
    const link = await url.inputValue()
    assert.match(link, /^http:\/\/127\.0\.0\.1:\d+\/admin\/invite#.+/)
    assert.deepEqual(await seriousViolations(owner.page, owner.errors), [], 'axe on the Staff screen')

    // The invitation, accepted in a browser of its own.
    const cora = await w.open()
    await cora.page.goto(link)
    await cora.page.getByLabel('Name').fill('Cora')
    await cora.page.getByLabel('Password').fill('a long pass phrase for cora')
    await cora.page.getByRole('button', { name: 'Accept invitation' }).click()
    await cora.page.getByRole('heading', { level: 1, name: 'Posts' }).waitFor()
    assert.equal(await cora.page.getByRole('link', { name: 'Staff' }).count(), 0, 'no Staff link for a contributor')
    // A contributor writes drafts: Status offers nothing else, and there is no Authors field.
    await cora.page.getByRole('button', { name: 'New post' }).click()
    const status = cora.page.getByLabel('Status')
    await status.waitFor()
    assert.deepEqual(await status.locator('option').allTextContents(), ['draft'])
    assert.equal(await cora.page.getByLabel('Authors', { exact: true }).count(), 0)
    // A published post of hers opens to be read.
    const published = (await w.t.request({ method: 'POST', url: '/posts', headers: admin, payload: { title: 'Out already', content: 'Published.', status: 'published', authors: ['cora'] } })).json()
    await cora.page.goto(`/admin#/posts/${published.id as number}`)
    await cora.page.getByText('you can read it, not change it').waitFor()
    assert.ok(await cora.page.getByRole('button', { name: 'Save', exact: true }).isDisabled())
    assert.ok(await cora.page.getByLabel('Title', { exact: true }).isDisabled())
    assert.equal(await cora.page.getByLabel('Status').inputValue(), 'published')
    assert.ok(await cora.page.getByText('Unsaved changes').isHidden(), 'nothing to save in a post opened to be read')
    assert.equal(await cora.page.getByRole('textbox', { name: 'Content' }).getAttribute('contenteditable'), 'false')
    assert.deepEqual(await seriousViolations(cora.page, cora.errors), [], 'axe on a read-only post')
    assert.deepEqual(await cspViolations(cora.page), [], 'no Content-Security-Policy violation in the contributor\'s editor')

    // An editor (the owner here) names a post's authors.
    await owner.page.getByRole('button', { name: 'New post' }).click()
    await owner.page.getByLabel('Title', { exact: true }).fill('Written together')
    const authors = owner.page.getByLabel('Authors', { exact: true })
    await authors.fill('cora')
    await authors.press('Enter')
    await owner.page.getByRole('button', { name: 'Save', exact: true }).click()
    await owner.page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    const together = (await w.t.request({ method: 'GET', url: '/posts?q=together&fields=title,authors', headers: admin })).json()[0]
    assert.deepEqual(together.authors, ['olive', 'cora'])
    await owner.page.goto('/admin#/staff')

    // The admin sees her, and makes her an author.
    await owner.page.getByRole('heading', { level: 1, name: 'Staff' }).waitFor()
    await owner.page.getByLabel('Role of Cora').waitFor()
    assert.deepEqual(await seriousViolations(owner.page, owner.errors), [], 'axe on the Staff screen with an admin\'s controls')
    await owner.page.getByLabel('Role of Cora').selectOption('author')
    await owner.page.getByRole('status').filter({ hasText: 'Cora is now author' }).waitFor()
    const listed = (await w.t.request({ method: 'GET', url: '/users?q=cora', headers: admin })).json()[0]
    assert.equal(listed.role, 'author')

    // Suspended, her open editor says so within seconds (not at her next save).
    await cora.page.goto('/admin#/posts/new')
    await cora.page.getByLabel('Title', { exact: true }).fill('Typed before the suspension')
    await owner.page.getByRole('button', { name: 'Suspend Cora' }).click()
    await owner.page.getByRole('status').filter({ hasText: 'Cora is suspended' }).waitFor()
    const told = Date.now()
    await cora.page.getByRole('alert').filter({ hasText: 'suspended your account' }).waitFor({ timeout: 10_000 })
    process.stdout.write(`the suspended editor said so after ${Date.now() - told} ms\n`)
    await cora.page.getByLabel('Email').waitFor()

    // At 375 px wide, nothing scrolls sideways and each control lies within the page.
    await owner.page.setViewportSize({ width: 375, height: 812 })
    assert.equal(await owner.page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'), 0, 'nothing scrolls sideways at 375 px')
    for (const name of ['Reinstate Cora', 'Remove Cora', 'Invite']) {
      const box = await owner.page.getByRole('button', { name }).boundingBox()
      assert.ok(box !== null && box.x >= 0 && box.x + box.width <= 375.5, `${name} lies within the 375 px: ${JSON.stringify(box)}`)
    }
    await owner.page.getByRole('button', { name: 'Remove Cora' }).click()
    await owner.page.getByRole('dialog').getByRole('button', { name: 'Remove user' }).click()
    await owner.page.getByRole('status').filter({ hasText: 'Cora removed' }).waitFor()
    assert.equal(await owner.page.getByRole('cell', { name: 'Cora' }).count(), 0)
    assert.deepEqual(await cspViolations(owner.page), [], 'no Content-Security-Policy violation on the Staff screen')
    // The browser logs the refusals: the suspended session's 401s, and the 409 of removing an author of posts before she is replaced.
    assert.deepEqual([...owner.errors, ...cora.errors].filter(e => !/status of (401|409)/.test(e)), [], 'no script errors')
    await owner.context.close()
    await cora.context.close()
  })
})
