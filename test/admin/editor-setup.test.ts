import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { cspViolations, editorMissing, type EditorWorld, seriousViolations, startEditorWorld } from './browser.ts'
import { before } from '../support/hooks.ts'

describe('the owner\'s set-up from the printed link, in Chromium', { skip: editorMissing() }, () => {
  let w: EditorWorld
  before(async () => { w = await startEditorWorld() })

  it('makes the owner\'s account at /admin/setup#<token> and opens the editor signed in; the link then says it is used', async () => {
    const { page, context, errors } = await w.open()
    const token = w.t.context.services.identity.setupToken
    const fill = async () => {
      await page.getByLabel('Name').fill('Olive Owner')
      await page.getByLabel('Email').fill('olive@example.com')
      await page.getByLabel('Password').fill('a long pass phrase for olive')
    }

    await page.goto('/admin/setup#not-the-token')
    await page.getByRole('heading', { level: 1, name: 'Create the owner\'s account' }).waitFor()
    assert.deepEqual(await seriousViolations(page, errors), [], 'axe: no serious or critical violation')
    await fill()
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.getByRole('alert').filter({ hasText: 'not the set-up link' }).waitFor()

    await page.goto(`/admin/setup#${token}`)
    await fill()
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.getByRole('heading', { level: 1, name: 'Posts' }).waitFor()
    assert.equal(new URL(page.url()).pathname, '/admin', 'the set-up link leaves the address')
    await page.getByRole('button', { name: 'Sign out' }).waitFor()
    const owners = (await w.t.request({ method: 'GET', url: '/users?role=owner', headers: await w.t.auth('root', ['admin']) })).json()
    assert.deepEqual(owners.map((u: { name: string }) => u.name), ['Olive Owner'])
    assert.ok((await context.cookies()).some(c => c.name === 'blog_refresh' && c.httpOnly), 'signed in with a session: its refresh token in the HttpOnly cookie')

    await page.goto(`/admin/setup#${token}`)
    await fill()
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.getByRole('alert').filter({ hasText: 'already has an owner' }).waitFor()
    assert.deepEqual(await cspViolations(page), [], 'no Content-Security-Policy violation')
    assert.deepEqual(errors.filter(e => !/status of 40[39]/.test(e)), [], 'no script errors (but the refused set-ups the browser logs)')
    await context.close()
  })
})
