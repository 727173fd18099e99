// VS Code client for maskc's language server: starts `maskc lsp` on stdio for
// documents of language `maskc-flex`.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("maskc").get("path", "maskc");
  const server = { command, args: ["lsp"], transport: TransportKind.stdio };
  client = new LanguageClient(
    "maskc",
    "maskc language server",
    { run: server, debug: server },
    { documentSelector: [{ language: "maskc-flex" }] }
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
