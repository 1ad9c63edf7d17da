import { registerProblems } from '../../errors-i18n.ts'

declare module '../../errors.ts' { interface ResourceProblems { EXPORT_NOT_FOUND: true } }

registerProblems({
  EXPORT_NOT_FOUND: {
    status: 404,
    title: 'Export not found',
    detail: 'No export with this id exists.',
    translations: {
      de: { title: 'Export nicht gefunden', detail: 'Es gibt keinen Export mit dieser ID.' },
      fr: { title: 'Export introuvable', detail: 'Aucun export ne porte cet identifiant.' },
      es: { title: 'Exportación no encontrada', detail: 'No existe ninguna exportación con este id.' },
    },
  },
})
