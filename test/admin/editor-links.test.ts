import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { cspViolations, editorMissing, type EditorWorld, seriousViolations, startEditorWorld } from './browser.ts'
import { before } from '../support/hooks.ts'

describe('an invitation\'s and a password reset\'s links, in Chromium', { skip: editorMissing() }, () => {
  let w: EditorWorld
  let owner: { authorization: string }
  before(async () => {
    w = await startEditorWorld()
    const setup = (await w.t.request({ method: 'POST', url: '/setup', payload: { token: w.t.context.services.identity.setupToken, name: 'Olive', email: 'olive@example.com', password: 'a long pass phrase for olive' } })).json()
    owner = { authorization: `Bearer ${setup.access_token as string}` }
  })

  it('accepts an invitation at /admin/invite#<token>, signed in at once; a reset link sets a new password to sign in with', async () => {
    const invitation = (await w.t.request({ method: 'POST', url: '/invitations', headers: owner, payload: { email: 'cora@example.com', role: 'contributor' } })).json()
    assert.match(invitation.url, /^\/admin\/invite#/)
    const first = await w.open()
    await first.page.goto('/admin/invite#not-an-invitation')
    await first.page.getByRole('heading', { level: 1, name: 'Accept the invitation' }).waitFor()
    assert.deepEqual(await seriousViolations(first.page, first.errors), [], 'axe on the invitation\'s page')
    await first.page.getByLabel('Name').fill('Cora')
    await first.page.getByLabel('Password').fill('a long pass phrase for cora')
    await first.page.getByRole('button', { name: 'Accept invitation' }).click()
    await first.page.getByRole('alert').filter({ hasText: 'not valid any more' }).waitFor()
    await first.page.goto(invitation.url)
    await first.page.getByLabel('Name').fill('Cora')
    await first.page.getByLabel('Password').fill('a long pass phrase for cora')
    await first.page.getByRole('button', { name: 'Accept invitation' }).click()
    await first.page.getByRole('heading', { level: 1, name: 'Posts' }).waitFor()
    assert.deepEqual(await cspViolations(first.page), [])
    await first.context.close()

    const cora = (await w.t.request({ method: 'GET', url: '/users?q=cora', headers: owner })).json()[0]
    assert.equal(cora.role, 'contributor')
    const reset = (await w.t.request({ method: 'POST', url: `/users/${cora.id as string}/password-reset`, headers: owner })).json()
    const second = await w.open()
    await second.page.goto(reset.url)
    await second.page.getByRole('heading', { level: 1, name: 'Set a new password' }).waitFor()
    assert.deepEqual(await seriousViolations(second.page, second.errors), [], 'axe on the reset\'s page')
    await second.page.getByLabel('New password', { exact: true }).fill('another long phrase for cora')
    await second.page.getByRole('button', { name: 'Set password' }).click()
    await second.page.getByRole('status').filter({ hasText: 'Your new password is set' }).waitFor()
    await second.page.getByLabel('Email').fill('cora@example.com')
    await second.page.getByLabel('Password', { exact: true }).fill('another long phrase for cora')
    await second.page.getByRole('button', { name: 'Sign in', exact: true }).click()
    await second.page.getByRole('heading', { level: 1, name: 'Posts' }).waitFor()
    assert.deepEqual(await cspViolations(second.page), [])
    assert.deepEqual([...first.errors, ...second.errors].filter(e => !/status of 404/.test(e)), [], 'no script errors (but the refused invitation the browser logs)')
    await second.context.close()
  })
})
