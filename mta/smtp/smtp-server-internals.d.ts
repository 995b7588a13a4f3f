// Owns the type declaration of the smtp-server internals Sluice overrides; only mta/smtp/listener.ts may use them.
declare module 'smtp-server/lib/smtp-connection' {
  export class SMTPConnection {
    init(): void;
  }
}
