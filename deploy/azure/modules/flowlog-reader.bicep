// Ghost Flow Log Reader on one flow-log container (scoped to the storage account's resource
// group): blob read on that container only, so Ghost reads the flow logs and nothing else the
// account holds.
targetScope = 'resourceGroup'

param storageAccountName string
param containerName string = 'insights-logs-flowlogflowevent'
param principalId string
param roleDefinitionId string

resource account 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource blobs 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' existing = {
  parent: account
  name: 'default'
}

resource container 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: blobs
  name: containerName
}

resource assignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(container.id, principalId, roleDefinitionId)
  scope: container
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: roleDefinitionId
  }
}
