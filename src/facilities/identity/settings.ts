import type { SettingsSection } from '../../config.ts'

/** People's settings: `config.identity`. */
export interface IdentitySettings {
  /** A session lasts this many days from its last refresh (SESSION_DAYS). */
  readonly sessionDays: number
  /** Failed sign-ins for one email within 15 minutes before its attempts are refused (SIGN_IN_EMAIL_FAILURES). */
  readonly emailFailures: number
  /** Failed sign-ins from one client address within 15 minutes before its attempts are refused (SIGN_IN_ADDRESS_FAILURES). */
  readonly addressFailures: number
}

declare module '../../config.ts' { interface ResourceSettings { readonly identity: IdentitySettings } }

export const identitySettings: SettingsSection<'identity'> = {
  name: 'identity',
  read: env => ({
    sessionDays: env.int('SESSION_DAYS', 30, 1, 365),
    emailFailures: env.int('SIGN_IN_EMAIL_FAILURES', 5, 1, 1000),
    addressFailures: env.int('SIGN_IN_ADDRESS_FAILURES', 20, 1, 100_000),
  }),
  rows: [
    { name: 'SESSION_DAYS', default: '30', description: 'A person\'s session lasts this many days (1–365) from its last refresh; then they sign in again ([people.md](people.md)).' },
    { name: 'SIGN_IN_EMAIL_FAILURES', default: '5', description: 'Failed sign-ins for one email within 15 minutes (1–1000) after which every further attempt for it is refused with 429 `SIGN_IN_THROTTLED`, for 60 s doubling per further failure up to an hour, on every instance, until a success. `RATE_LIMIT_MAX=0` does not turn it off.' },
    { name: 'SIGN_IN_ADDRESS_FAILURES', default: '20', description: 'The same for one client address (1–100000): failed sign-ins from it, whatever the email.' },
  ],
}
