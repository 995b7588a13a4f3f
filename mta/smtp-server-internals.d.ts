// Owns the type declaration of the one smtp-server internal Sluice touches (mta/smtp-listener.ts: greeting delay).
declare module 'smtp-server/lib/smtp-connection' {
  export class SMTPConnection {
    init(): void;
  }
}
