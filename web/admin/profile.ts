import { startRegistration } from '@simplewebauthn/browser'
import QRCode from 'qrcode'
import { credential, endSessionOnService, failureText, Problem } from './api.ts'
import { field, h, start, when } from './dom.ts'
import { deviceOf, mediaImage, upload } from './media.ts'
import { forgetPerson, type User } from './people.ts'
import type { Shell } from './shell.ts'

interface Passkey { id: string, name: string, created_at: string, last_used_at: string | null }
interface Session { id: string, created_at: string, last_used_at: string, user_agent: string, method: string, current: boolean }

const SVG = 'http://www.w3.org/2000/svg'

/** A QR code as SVG made here, from its modules (no inline style, no image from elsewhere). */
function qrCode (text: string, label: string): SVGSVGElement {
  const { modules } = QRCode.create(text, { errorCorrectionLevel: 'M' })
  const size = modules.size + 8
  const svg = document.createElementNS(SVG, 'svg')
  svg.setAttribute('viewBox', `0 0 ${size} ${size}`)
  svg.setAttribute('role', 'img')
  svg.setAttribute('aria-label', label)
  svg.setAttribute('class', 'qr')
  const path = document.createElementNS(SVG, 'path')
  let d = ''
  for (let y = 0; y < modules.size; y++) {
    for (let x = 0; x < modules.size; x++) if (modules.get(x, y) === 1) d += `M${x + 4} ${y + 4}h1v1h-1z`
  }
  path.setAttribute('d', d)
  const back = document.createElementNS(SVG, 'rect')
  for (const [k, v] of [['width', size], ['height', size], ['class', 'qr-back']] as const) back.setAttribute(k, String(v))
  svg.append(back, path)
  return svg
}

/**
 * `Profile`: the signed-in person's name, slug, bio, website and avatar (`PATCH /users/me` with
 * `If-Match`); their passkeys, password, two-factor codes, and sessions.
 */
export function profileScreen (shell: Shell): HTMLElement {
  const heading = h('h1', { tabindex: -1 }, 'Profile')
  let me: User | null = null
  let etag: string | null = null
  let avatar: string | null = null

  // The profile
  const name = h('input', { type: 'text', required: true, maxlength: 100, autocomplete: 'name' })
  const slug = h('input', { type: 'text', maxlength: 100, pattern: '[a-z0-9]+(-[a-z0-9]+)*', spellcheck: 'false', autocapitalize: 'none' })
  const bio = h('textarea', { rows: 4, maxlength: 2000 })
  const website = h('input', { type: 'url', maxlength: 2000, inputmode: 'url' })
  const avatarInput = h('input', { type: 'file', accept: 'image/jpeg,image/png,image/webp,image/avif,image/gif' })
  const avatarShown = h('div', { class: 'avatar-shown' })
  const avatarRow = field('Avatar', avatarInput)
  const drawAvatar = () => {
    avatarShown.replaceChildren(...(avatar === null
      ? []
      : [h('img', { src: mediaImage(avatar, 320), alt: 'Your avatar', width: 80, height: 80 }),
          h('button', { type: 'button', onclick: () => { avatar = null; drawAvatar() } }, 'Remove avatar')]))
  }
  avatarInput.addEventListener('change', () => {
    const file = avatarInput.files?.[0]
    if (file === undefined) return
    upload(shell, file).then(media => {
      avatar = media.id
      avatarInput.value = ''
      drawAvatar()
      shell.say('Image uploaded: Save profile to keep it')
    }, (err: unknown) => { shell.alert(`The image was not uploaded: ${failureText(err)}`) })
  })
  const show = (u: User, tag: string | null) => {
    me = u
    etag = tag
    name.value = u.name
    slug.value = u.slug
    bio.value = u.bio
    website.value = u.website ?? ''
    avatar = u.avatar
    drawAvatar()
    drawTwoFactor()
  }
  const profile = h('form', { class: 'fields', 'aria-labelledby': 'profile-title', novalidate: true },
    h('h2', { id: 'profile-title' }, 'About you'),
    field('Name', name).row,
    field('Slug', slug, 'Your author page\'s address: lower-case letters, digits and dashes.').row,
    field('Bio', bio).row,
    field('Website', website).row,
    h('div', { class: 'row' }, avatarRow.row, avatarShown),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Save profile')))
  profile.addEventListener('submit', event => {
    event.preventDefault()
    if (me === null) return
    const patch = { name: name.value.trim(), slug: slug.value.trim(), bio: bio.value, website: website.value.trim() === '' ? null : website.value.trim(), avatar }
    shell.api.call<User>('PATCH', '/users/me', {
      body: JSON.stringify(patch),
      headers: { 'content-type': 'application/merge-patch+json', ...(etag === null ? {} : { 'if-match': etag }) },
    }).then(({ body, headers }) => {
      show(body, headers.get('etag'))
      shell.alert(null)
      shell.say('Profile saved')
    }, (err: unknown) => {
      shell.alert(err instanceof Problem && err.status === 412 ? 'Not saved: your profile changed in another tab. Reload to see it.' : `Not saved: ${failureText(err)}`)
    })
  })

  // Passkeys
  const passkeys = h('ul', { class: 'plain', 'aria-label': 'Your passkeys' })
  const loadPasskeys = async () => {
    const { body } = await shell.api.call<Passkey[]>('GET', '/users/me/passkeys')
    passkeys.replaceChildren(...body.map(p => h('li', {},
      h('span', {}, p.name), ' ',
      h('span', { class: 'meta' }, `added ${when(p.created_at)}${p.last_used_at === null ? '' : `, last used ${when(p.last_used_at)}`}`), ' ',
      h('button', {
        type: 'button',
        onclick: () => {
          shell.api.call('DELETE', `/users/me/passkeys/${encodeURIComponent(p.id)}`).then(async () => {
            shell.say(`Passkey ${p.name} removed`)
            await loadPasskeys()
            addPasskey.focus()
          }, (err: unknown) => { shell.alert(failureText(err)) })
        },
      }, `Remove passkey ${p.name}`))))
    if (body.length === 0) passkeys.append(h('li', { class: 'meta' }, 'No passkey yet.'))
    return body
  }
  const addPasskey = h('button', {
    type: 'button',
    onclick: () => {
      start((async () => {
        try {
          const known = (await shell.api.call<Passkey[]>('GET', '/users/me/passkeys')).body.map(p => p.name)
          const device = deviceOf(navigator.userAgent)
          let pkName = device
          for (let n = 2; known.includes(pkName); n++) pkName = `${device} ${n}`
          const options = await shell.api.call<Record<string, unknown>>('POST', '/users/me/passkeys/options', {})
          const response = await startRegistration({ optionsJSON: options.body as never })
          await shell.api.call('POST', '/users/me/passkeys', { json: { name: pkName, response } })
          shell.alert(null)
          shell.say(`Passkey ${pkName} added`)
          await loadPasskeys()
        } catch (err) {
          shell.alert(`No passkey added: ${failureText(err)}`)
        }
      })())
    },
  }, 'Add a passkey')

  // Password
  const current = h('input', { type: 'password', required: true, autocomplete: 'current-password', maxlength: 256 })
  const next = h('input', { type: 'password', required: true, autocomplete: 'new-password', minlength: 12, maxlength: 256 })
  const password = h('form', { class: 'fields', 'aria-labelledby': 'password-title' },
    h('h2', { id: 'password-title' }, 'Password'),
    field('Current password', current).row,
    field('New password', next, '12 to 256 characters; not a common password. Your other sessions end.').row,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Change password')))
  password.addEventListener('submit', event => {
    event.preventDefault()
    shell.api.call('PUT', '/users/me/password', { json: { current_password: current.value, password: next.value } }).then(async () => {
      current.value = ''
      next.value = ''
      shell.alert(null)
      shell.say('Password changed: your other sessions ended')
      await loadSessions()
    }, (err: unknown) => {
      shell.alert(err instanceof Problem && err.code === 'WRONG_PASSWORD' ? 'Not changed: the current password is not right.' : `Not changed: ${failureText(err)}`)
      current.focus()
    })
  })

  // Two-factor codes
  const twoFactor = h('div', {})
  function drawTwoFactor (): void {
    if (me?.two_factor === true) {
      twoFactor.replaceChildren(h('p', {}, 'Two-factor codes are on: a password sign-in asks for a code.'))
      return
    }
    const turnOn = h('button', {
      type: 'button',
      onclick: () => {
        shell.api.call<{ secret: string, otpauth_url: string }>('POST', '/users/me/two-factor', {}).then(({ body }) => {
          shell.alert(null)
          askCode(body.secret, body.otpauth_url)
        }, (err: unknown) => { shell.alert(failureText(err)) })
      },
    }, 'Turn on two-factor')
    twoFactor.replaceChildren(h('p', {}, 'With two-factor codes on, a password sign-in also asks for a code from an authenticator app.'), turnOn)
  }
  const askCode = (secret: string, url: string) => {
    const code = h('input', { type: 'text', inputmode: 'numeric', autocomplete: 'one-time-code', required: true, maxlength: 10 })
    const form = h('form', { class: 'fields' },
      h('p', { id: 'two-factor-how' }, 'Scan this code with your authenticator app, or type the secret into it, then give the code it shows.'),
      qrCode(url, 'QR code of the two-factor secret'),
      h('p', {}, 'Secret: ', h('code', { class: 'secret' }, secret)),
      field('Code', code).row,
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Confirm')))
    form.addEventListener('submit', event => {
      event.preventDefault()
      shell.api.call<{ recovery_codes: string[] }>('POST', '/users/me/two-factor/confirm', { json: { code: code.value.trim() } }).then(({ body }) => {
        if (me !== null) me = { ...me, two_factor: true }
        const codes = h('ol', { class: 'recovery', 'aria-label': 'Recovery codes' }, ...body.recovery_codes.map(c => h('li', {}, h('code', {}, c))))
        twoFactor.replaceChildren(
          h('p', { tabindex: -1, id: 'recovery-title' }, 'Two-factor codes are on. Keep these recovery codes somewhere safe: each signs in once without the app. They are shown only now.'),
          codes)
        shell.alert(null)
        shell.say('Two-factor codes are on')
        twoFactor.querySelector<HTMLElement>('#recovery-title')?.focus()
      }, (err: unknown) => {
        shell.alert(err instanceof Problem && err.status === 401 ? 'That code is not right: try the one the app shows now.' : failureText(err))
        code.focus()
      })
    })
    twoFactor.replaceChildren(form)
    code.focus()
  }

  // Sessions
  const sessions = h('ul', { class: 'plain', 'aria-label': 'Your sessions' })
  const loadSessions = async () => {
    const { body } = await shell.api.call<Session[]>('GET', '/sessions')
    const seen = new Map<string, number>()
    sessions.replaceChildren(...body.map(s => {
      const base = deviceOf(s.user_agent)
      const n = (seen.get(base) ?? 0) + 1
      seen.set(base, n)
      const device = n === 1 ? base : `${base} ${n}`
      return h('li', {},
        h('span', {}, device), ' ',
        h('span', { class: 'meta' }, `${s.current ? 'this browser, ' : ''}signed in ${when(s.created_at)} (${s.method}), last used ${when(s.last_used_at)}`), ' ',
        h('button', {
          type: 'button',
          onclick: () => {
            if (s.current) {
              // This browser's own session: the editor signs out, as with Sign out.
              start(endSessionOnService().then(() => { credential.clear(); forgetPerson(); location.hash = '#/'; location.reload() }))
              return
            }
            shell.api.call('DELETE', `/sessions/${encodeURIComponent(s.id)}`).then(async () => {
              shell.say(`${device} is signed out`)
              await loadSessions()
            }, (err: unknown) => { shell.alert(failureText(err)) })
          },
        }, `Sign out ${device}`))
    }))
  }

  const section = h('section', { class: 'screen profile' }, heading,
    h('p', { class: 'loading', role: 'status' }, 'Loading your profile…'))
  shell.api.call<User>('GET', '/users/me').then(async ({ body, headers }) => {
    show(body, headers.get('etag'))
    section.replaceChildren(heading,
      profile,
      h('section', { class: 'fields', 'aria-labelledby': 'passkeys-title' },
        h('h2', { id: 'passkeys-title' }, 'Passkeys'),
        h('p', {}, 'A passkey signs you in without a password (Sign in with a passkey).'),
        passkeys,
        h('div', { class: 'actions' }, addPasskey)),
      password,
      h('section', { class: 'fields', 'aria-labelledby': 'two-factor-title' }, h('h2', { id: 'two-factor-title' }, 'Two-factor codes'), twoFactor),
      h('section', { class: 'fields', 'aria-labelledby': 'sessions-title' }, h('h2', { id: 'sessions-title' }, 'Sessions'), sessions))
    await Promise.all([loadPasskeys(), loadSessions()])
  }).catch((err: unknown) => {
    section.replaceChildren(heading, h('p', {}, err instanceof Problem && err.status === 403
      ? 'This is the profile of a person: signed in with an API key, there is none.'
      : `Your profile could not be read: ${failureText(err)}`))
  })
  return section
}
