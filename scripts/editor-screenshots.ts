/**
 * Takes docs/editor-list.png and docs/editor-post.png: the editor at /admin, in Chromium, on a
 * fresh service with a few posts, as docs/editor.md shows it. Needs `npm run build` (the editor's
 * assets) and /usr/bin/chromium. Run: `npx tsx scripts/editor-screenshots.ts`.
 */
import path from 'node:path'
import { signIn, startEditorWorld } from '../test/admin/browser.ts'

const DOCS = path.resolve(import.meta.dirname, '..', 'docs')

const w = await startEditorWorld('sqlite', {}, { selfClosing: false })
try {
  const key = await w.t.apiKey('ada', ['posts:write'])
  const headers = { authorization: `Bearer ${key}` }
  const posts = [
    { title: 'Ten small habits of careful writers', tags: ['writing', 'craft'], status: 'published' },
    { title: 'Notes from the spring release', tags: ['releases'], status: 'published' },
    { title: 'Why we moved the blog to Markdown', tags: ['markdown', 'tools'], status: 'draft' },
    { title: 'A field guide to editorial calendars', tags: ['planning'], status: 'scheduled', publish_at: new Date(Date.now() + 7 * 86_400_000).toISOString() },
    { title: 'Reading list for the quiet season', tags: ['reading'], status: 'archived' },
  ]
  for (const p of posts) await w.t.request({ method: 'POST', url: '/posts', headers, payload: { content: 'A paragraph.', ...p } })
  const content = '# Why we moved the blog to Markdown\n\nThree reasons, in the order they mattered:\n\n- **Plain text** lasts longer than any editor.\n- Reviews are *diffs*, not guesses.\n- The preview is the page: the same renderer makes both.\n\n> Write first, format later.\n\nSee [the style guide](https://example.com/style) for the details.\n'
  await w.t.request({ method: 'PUT', url: '/posts/3', headers, payload: { title: 'Why we moved the blog to Markdown', content, status: 'draft', tags: ['markdown', 'tools'], excerpt: null } })

  const { page, context } = await w.open({ width: 1200, height: 1000 })
  await signIn(page, key)
  await page.getByRole('link', { name: 'Reading list for the quiet season' }).waitFor()
  await page.screenshot({ path: path.join(DOCS, 'editor-list.png') })
  await page.getByRole('link', { name: 'Why we moved the blog to Markdown' }).click()
  await page.getByRole('region', { name: 'Preview' }).getByRole('heading', { level: 1 }).waitFor()
  await page.getByLabel('Title', { exact: true }).click()
  await page.screenshot({ path: path.join(DOCS, 'editor-post.png') })
  await context.close()
  process.stdout.write(`wrote ${path.join(DOCS, 'editor-list.png')} and editor-post.png\n`)
} finally {
  await w.close()
}
