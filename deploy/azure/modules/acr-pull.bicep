// AcrPull on the registry that holds Ghost's image, for each identity that pulls it (the apps'
// and the migration job's), granted before the apps exist. Deployed by ../main.bicep in the
// registry's resource group.
targetScope = 'resourceGroup'

param registryName string
param principalIds array

// AcrPull (built-in): pull images, nothing else
var acrPullRole = subscriptionResourceId('Microsoft.Authorization/roleDefinitions', '7f951dda-4ed3-4680-a7ca-43fe172d538d')

resource registry 'Microsoft.ContainerRegistry/registries@2023-07-01' existing = {
  name: registryName
}

resource pull 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for principalId in principalIds: {
  scope: registry
  name: guid(registry.id, principalId, acrPullRole)
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: acrPullRole
  }
}]
