import { Api } from './api.ts'
import { h } from './dom.ts'

/** What every screen shares: the API, the live status, the place for alerts, and navigation. */
export interface Shell {
  readonly api: Api
  /** Says something politely (the `status` live region): `Saved`, `Deleted` … */
  say (text: string): void
  /** Shows an error until the next one, or until cleared (role `alert`). */
  alert (text: string | null): void
  go (hash: string): void
}

export function createShell (onSignedOut: (why: string) => void): { shell: Shell, status: HTMLElement, alerts: HTMLElement } {
  const status = h('p', { role: 'status', class: 'status', 'aria-live': 'polite', 'aria-atomic': 'true' })
  const alerts = h('div', { role: 'alert', class: 'alert', hidden: true })
  let clear: ReturnType<typeof setTimeout> | undefined
  const shell: Shell = {
    api: new Api(onSignedOut),
    say (text) {
      // The same words twice in a row are announced again only if the region changes in between.
      status.textContent = ''
      clearTimeout(clear)
      requestAnimationFrame(() => { status.textContent = text })
      clear = setTimeout(() => { status.textContent = '' }, 8000)
    },
    alert (text) {
      alerts.hidden = text === null
      alerts.textContent = text ?? ''
    },
    go (hash) {
      if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'))
      else location.hash = hash
    },
  }
  return { shell, status, alerts }
}
