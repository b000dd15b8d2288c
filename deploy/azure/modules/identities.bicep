// Ghost's two user-assigned identities, in a module of their own so that their principal and
// client ids reach the other modules as parameters (known at the start of those deployments:
// a resource name or a variable loop may use them there, never here). Deployed by ../main.bicep.
//   <prefix>-identity  the apps: Azure reads, captures, Key Vault, az, PostgreSQL (a role that
//                      owns nothing)
//   <prefix>-migrate   the migration job only: PostgreSQL's Entra administrator, owner of the schema
targetScope = 'resourceGroup'

param location string
param namePrefix string

resource app 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${namePrefix}-identity'
  location: location
}

resource migrate 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${namePrefix}-migrate'
  location: location
}

output appName string = app.name
output appPrincipalId string = app.properties.principalId
output appClientId string = app.properties.clientId
output migrateName string = migrate.name
output migratePrincipalId string = migrate.properties.principalId
output migrateClientId string = migrate.properties.clientId
