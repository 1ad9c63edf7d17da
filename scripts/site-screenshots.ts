/**
 * Takes the pictures of docs/editor.md's people and site screens (docs/editor-sign-in.png,
 * editor-profile.png, editor-staff.png, editor-site.png) and of docs/site.md's reading site
 * (docs/site-<home|post>-<light|dark>-<375|1280>.png): a fresh service and its site, in Chromium,
 * with six posts, their feature images (made here with sharp), tags and an author with a bio.
 * Each picture is the first screen only. Needs `npm run build` and /usr/bin/chromium.
 * Run: `npx tsx scripts/site-screenshots.ts`.
 */
import path from 'node:path'
import sharp from 'sharp'
import { eventually, startEditorWorld } from '../test/admin/browser.ts'

const DOCS = path.resolve(import.meta.dirname, '..', 'docs')
const PASSWORD = 'a long pass phrase for olive'
const PALETTES = [['#0f766e', '#99f6e4'], ['#7c2d12', '#fdba74'], ['#1e3a8a', '#93c5fd'], ['#581c87', '#f0abfc'], ['#14532d', '#bef264'], ['#334155', '#e2e8f0']] as const

/** A feature image: a gradient with a few soft shapes, as a JPEG of 1600×900. */
async function picture (i: number): Promise<Buffer> {
  const [dark, light] = PALETTES[i % PALETTES.length]!
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="1600" height="900">
    <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="${dark}"/><stop offset="1" stop-color="${light}"/></linearGradient></defs>
    <rect width="1600" height="900" fill="url(#g)"/>
    <circle cx="${300 + i * 170}" cy="${260 + (i % 3) * 90}" r="${180 + i * 20}" fill="#ffffff" fill-opacity="0.18"/>
    <circle cx="${1300 - i * 120}" cy="${640 - (i % 2) * 120}" r="240" fill="#000000" fill-opacity="0.12"/>
    <path d="M0 760 C 400 ${640 + i * 20}, 900 ${860 - i * 15}, 1600 700 L1600 900 L0 900 Z" fill="#ffffff" fill-opacity="0.22"/>
  </svg>`
  return await sharp(Buffer.from(svg)).jpeg({ quality: 82 }).toBuffer()
}

const w = await startEditorWorld('sqlite', {}, { site: true, selfClosing: false })
try {
  const base = w.origin
  await w.t.request({ method: 'POST', url: '/setup', payload: { token: w.t.context.services.identity.setupToken, name: 'Olive Marsh', email: 'olive@example.com', password: PASSWORD } })
  const signedIn = (await w.t.request({ method: 'POST', url: '/sessions', payload: { email: 'olive@example.com', password: PASSWORD } })).json()
  const olive = { authorization: `Bearer ${signedIn.access_token as string}` }
  const uploadImage = async (bytes: Buffer, name: string, alt: string): Promise<string> => {
    const form = new FormData()
    form.append('file', new Blob([new Uint8Array(bytes)], { type: 'image/jpeg' }), name)
    const res = await fetch(`${base}/media`, { method: 'POST', headers: olive, body: form })
    if (res.status !== 201) throw new Error(`POST /media answered ${res.status}: ${await res.text()}`)
    const id = ((await res.json()) as { id: string }).id
    await fetch(`${base}/media/${id}`, { method: 'PATCH', headers: { ...olive, 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ alt }) })
    return id
  }
  const me = await w.t.request({ method: 'GET', url: '/users/me', headers: olive })
  const avatar = await uploadImage(await sharp({ create: { width: 400, height: 400, channels: 3, background: '#b45309' } }).jpeg().toBuffer(), 'olive.jpg', 'Olive Marsh')
  await w.t.request({
    method: 'PATCH',
    url: '/users/me',
    headers: { ...olive, 'content-type': 'application/merge-patch+json', 'if-match': me.headers.etag as string },
    payload: JSON.stringify({ bio: 'Olive edits this blog and writes about the craft of small, careful software: notes, habits and the odd field trip.', website: 'https://example.com/olive', avatar }),
  })
  for (const [email, role] of [['ben@example.com', 'editor'], ['cora@example.com', 'author']] as const) {
    const inv = (await w.t.request({ method: 'POST', url: '/invitations', headers: olive, payload: { email, role } })).json()
    if (role === 'editor') await w.t.request({ method: 'POST', url: '/invitations/accept', payload: { token: inv.token, name: 'Ben Okafor', password: 'a long pass phrase for ben' } })
  }
  const site = await w.t.request({ method: 'GET', url: '/site' })
  await w.t.request({
    method: 'PATCH',
    url: '/site',
    headers: { ...olive, 'content-type': 'application/merge-patch+json', 'if-match': site.headers.etag as string },
    payload: JSON.stringify({ title: 'Field Notes', description: 'Small essays on writing software carefully.', accent_color: '#0f766e', navigation: [{ label: 'About', url: '/about' }, { label: 'Archive', url: '/search?q=' }], posts_per_page: 6 }),
  })

  const posts = [
    { title: 'Ten small habits of careful writers', tags: ['writing', 'craft'], excerpt: 'Read it aloud, cut the first paragraph, and other habits that make a text easier to follow.' },
    { title: 'Notes from the spring release', tags: ['releases'], excerpt: 'What changed, what we took out, and why the changelog is shorter than last time.' },
    { title: 'Why we moved the blog to Markdown', tags: ['markdown', 'tools'], excerpt: 'Plain text outlives every editor; reviews become diffs instead of guesses.' },
    { title: 'A field guide to editorial calendars', tags: ['planning'], excerpt: 'A calendar is a promise to readers. Here is how to keep one without burning out.' },
    { title: 'Reading list for the quiet season', tags: ['reading'], excerpt: 'Six books about attention, maintenance and the long middle of projects.' },
    { title: 'On naming things, again', tags: ['craft', 'code'], excerpt: 'A name is the smallest piece of documentation, and the one read most often.' },
  ]
  const content = 'Three reasons, in the order they mattered.\n\n## Plain text lasts\n\nA file of **plain text** opens in any editor, today and in twenty years. Formats come and go; words stay.\n\n## Reviews are diffs\n\nWhen a change is a *diff*, a reviewer sees exactly what moved. No guessing what the toolbar did.\n\n> Write first, format later.\n\n```sh\ngit diff --word-diff posts/markdown.md\n```\n\nSee [the style guide](https://example.com/style) for the details, and the notes below for what we would do differently.\n\n- Keep one sentence per line.\n- Link to sources, not to search results.\n- Prefer short headings.\n'
  for (const [i, p] of posts.entries()) {
    const image = await uploadImage(await picture(i), `feature-${i}.jpg`, `Abstract shapes in ${PALETTES[i]![0]} and ${PALETTES[i]![1]}`)
    const res = await w.t.request({ method: 'POST', url: '/posts', headers: olive, payload: { ...p, content, status: 'published', feature_image: image, published_at: new Date(Date.UTC(2026, 10, 2 + i * 4, 9)).toISOString() } })
    if (res.statusCode !== 201) throw new Error(`POST /posts answered ${res.statusCode}: ${res.body}`)
  }

  // The editor.
  const shots: string[] = []
  const shoot = async (page: import('playwright-core').Page, name: string) => {
    // Every image of the first screen in, as a reader sees it once the page has settled (those below load lazily).
    await eventually(async () => await page.evaluate('Array.from(document.images).every(i => i.getBoundingClientRect().top >= innerHeight || (i.complete && i.naturalWidth > 0))') as boolean, `${name}: every image on the first screen loaded`)
    await page.screenshot({ path: path.join(DOCS, name) })
    shots.push(name)
  }
  const { page, context } = await w.open({ width: 1200, height: 900 })
  await page.goto('/admin')
  await page.getByLabel('Email').waitFor()
  await shoot(page, 'editor-sign-in.png')
  await page.getByLabel('Email').fill('olive@example.com')
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.getByRole('heading', { level: 1, name: 'Posts' }).waitFor()
  await page.getByRole('link', { name: 'Profile' }).click()
  await page.getByRole('button', { name: 'Save profile' }).waitFor()
  await page.getByRole('img', { name: 'Your avatar' }).waitFor()
  await shoot(page, 'editor-profile.png')
  await page.getByRole('link', { name: 'Staff' }).click()
  await page.getByLabel('Role of Ben Okafor').waitFor()
  await shoot(page, 'editor-staff.png')
  await page.getByRole('link', { name: 'Site', exact: true }).click()
  await page.getByRole('button', { name: 'Save site' }).waitFor()
  await page.getByLabel('Site title').click()
  await shoot(page, 'editor-site.png')
  await context.close()

  // The reading site, light and dark, narrow and wide.
  const siteUrl = w.site!.url
  for (const scheme of ['light', 'dark'] as const) {
    for (const width of [375, 1280]) {
      const ctx = await w.browser.newContext({ viewport: { width, height: width === 375 ? 812 : 800 }, colorScheme: scheme, baseURL: siteUrl })
      const p = await ctx.newPage()
      await p.goto('/')
      await p.waitForLoadState('networkidle')
      await shoot(p, `site-home-${scheme}-${width}.png`)
      await p.getByRole('link', { name: 'Why we moved the blog to Markdown' }).click()
      await p.getByRole('heading', { level: 1, name: 'Why we moved the blog to Markdown' }).waitFor()
      await p.waitForLoadState('networkidle')
      await shoot(p, `site-post-${scheme}-${width}.png`)
      await ctx.close()
    }
  }
  process.stdout.write(`wrote ${shots.map(s => path.join('docs', s)).join(', ')}\n`)
} finally {
  await w.close()
}
