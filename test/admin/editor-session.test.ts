import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SignJWT } from 'jose'
import { json, JWT_SECRET } from '../helper.ts'
import { editorMissing, type EditorWorld, eventually, startEditorWorld, useKey } from './browser.ts'
import { before } from '../support/hooks.ts'

describe('the editor when its credential expires, in Chromium', { skip: editorMissing() }, () => {
  let w: EditorWorld
  before(async () => {
    // No leeway on `exp`, so that the credential expires while the test watches.
    w = await startEditorWorld('sqlite', { AUTH_CLOCK_TOLERANCE_S: '0' })
  })

  it('signs out, says why, and after signing in again shows the same post with the text typed before', async () => {
    const expires = Math.floor(Date.now() / 1000) + 4
    const brief = await new SignJWT({ scope: 'posts:write' }).setProtectedHeader({ alg: 'HS256' }).setSubject('sam').setExpirationTime(expires).sign(new TextEncoder().encode(JWT_SECRET))
    const { page, context } = await w.open()
    await page.goto('/admin')
    await useKey(page)
    await page.getByLabel('API key').fill(brief)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('button', { name: 'New post' }).click()
    await page.getByLabel('Title', { exact: true }).fill('Kept through a sign-in')
    const content = page.getByRole('textbox', { name: 'Content' })
    await content.click()
    await page.keyboard.insertText('Typed before the key expired.')
    await eventually(async () => Date.now() / 1000 > expires + 1, 'the credential expired', 10_000)
    await page.keyboard.insertText(' And after.')

    // The next request (the preview's) is refused: the tab forgets the credential and asks again.
    await page.getByRole('alert').filter({ hasText: 'Signed out' }).waitFor()
    assert.equal(await page.evaluate('sessionStorage.getItem("blog-editor.token")'), null)
    await useKey(page)
    await page.getByLabel('API key').fill(await w.t.token('sam', ['posts:write']))
    await page.getByRole('button', { name: 'Sign in' }).click()

    await page.getByText('unsaved changes, kept in this tab, are back').waitFor()
    assert.equal(await page.getByLabel('Title', { exact: true }).inputValue(), 'Kept through a sign-in')
    assert.equal(await content.textContent(), 'Typed before the key expired. And after.')
    await page.keyboard.press('Control+s')
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    const id = Number(/#\/posts\/(\d+)$/.exec(page.url())![1])
    const post = json(await w.t.request({ method: 'GET', url: `/posts/${id}`, headers: await w.t.auth('sam') }))
    assert.equal(post.content, 'Typed before the key expired. And after.')
    await context.close()
  })
})
