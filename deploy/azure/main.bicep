// Ghost on Azure: one resource group with everything Ghost runs on, three custom roles at the
// subscription (deploy/azure/ghost-role.json, ghost-storage-role.json and ghost-flowlog-role.json,
// checked by tests/deploy/test_role.py), and their assignments on the resource groups Ghost may
// investigate and on the flow-log containers it may read.
//
//   az deployment sub create --location westeurope --template-file deploy/azure/main.bicep \
//     --parameters @deploy/azure/main.parameters.json
//
// docs/deploy.md walks through it, from nothing to `/ghost investigate` in a channel.
targetScope = 'subscription'

@description('Azure region for Ghost\'s own resources.')
param location string = deployment().location

@description('Short lowercase prefix of every resource name (3-11 letters or digits).')
@minLength(3)
@maxLength(11)
param namePrefix string = 'ghost'

@description('Resource group that holds Ghost\'s own resources (created if missing).')
param ghostResourceGroupName string = '${namePrefix}-rg'

@description('Resource groups Ghost may investigate: its identity gets the Ghost Investigator role on each.')
param investigatedResourceGroups array

@description('Flow-log containers Ghost may read, each {resourceGroup, storageAccount} (container insights-logs-flowlogflowevent): its identity gets Ghost Flow Log Reader on each container.')
param flowLogStorage array = []

@description('Resource group of the regions\' Network Watchers (Azure creates NetworkWatcherRG).')
param networkWatcherResourceGroup string = 'NetworkWatcherRG'

@description('The Ghost image, e.g. myregistry.azurecr.io/ghost:0.1.0 (deploy/container/Dockerfile).')
param image string

@description('Resource id of the Azure Container Registry holding a private image (the deployment grants both identities AcrPull on it before the apps pull); empty for a public image.')
param registryResourceId string = ''

@description('Replicas of the web app (ghost serve). At least 2, so a restart never drops Slack\'s 3-second acks.')
@minValue(2)
param webReplicas int = 2

@description('Replicas of the worker app (ghost worker).')
@minValue(1)
param workerReplicas int = 2

@description('Days a packet capture blob is kept in the capture container before the lifecycle rule deletes it.')
@minValue(1)
param captureRetentionDays int = 7

@description('PostgreSQL break-glass administrator login (password authentication). Ghost never uses it: the apps and the migration job sign in with their managed identities.')
param postgresAdminLogin string = 'ghostadmin'

@description('PostgreSQL break-glass administrator password, 24-128 characters with upper case, lower case and digits (Azure wants three of the four classes). Keep it in your own Key Vault and pass it by reference so that every redeploy sends the same value (docs/deploy.md).')
@secure()
@minLength(24)
@maxLength(128)
param postgresAdminPassword string

@description('PostgreSQL compute size.')
param postgresSkuName string = 'Standard_B2s'

@description('PostgreSQL tier of that size.')
@allowed([
  'Burstable'
  'GeneralPurpose'
  'MemoryOptimized'
])
param postgresSkuTier string = 'Burstable'

@description('Secrets written to Key Vault. One left empty is written as a placeholder that `ghost doctor` reports; pass the value on a later deployment to set it (docs/deploy.md).')
@secure()
param geminiApiKey string = ''
@secure()
param slackBotToken string = ''
@secure()
param slackSigningSecret string = ''
@secure()
param teamsAppPassword string = ''

@description('Plain settings of both apps (GHOST_APPROVERS, GHOST_MODEL, MicrosoftAppId, ...), name -> value.')
param extraSettings object = {}

var investigatorDoc = loadJsonContent('ghost-role.json')
var storageDoc = loadJsonContent('ghost-storage-role.json')
var flowLogDoc = loadJsonContent('ghost-flowlog-role.json')

resource ghostRg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: ghostResourceGroupName
  location: location
}

resource investigatorRole 'Microsoft.Authorization/roleDefinitions@2022-04-01' = {
  name: guid(subscription().id, namePrefix, 'ghost-investigator')
  properties: {
    roleName: '${investigatorDoc.Name} (${namePrefix})'
    description: investigatorDoc.Description
    type: 'CustomRole'
    permissions: [
      {
        actions: investigatorDoc.Actions
        notActions: investigatorDoc.NotActions
        dataActions: investigatorDoc.DataActions
        notDataActions: investigatorDoc.NotDataActions
      }
    ]
    assignableScopes: [
      subscription().id
    ]
  }
}

resource flowLogRole 'Microsoft.Authorization/roleDefinitions@2022-04-01' = {
  name: guid(subscription().id, namePrefix, 'ghost-flowlog-reader')
  properties: {
    roleName: '${flowLogDoc.Name} (${namePrefix})'
    description: flowLogDoc.Description
    type: 'CustomRole'
    permissions: [
      {
        actions: flowLogDoc.Actions
        notActions: flowLogDoc.NotActions
        dataActions: flowLogDoc.DataActions
        notDataActions: flowLogDoc.NotDataActions
      }
    ]
    assignableScopes: [
      subscription().id
    ]
  }
}

resource captureStorageRole 'Microsoft.Authorization/roleDefinitions@2022-04-01' = {
  name: guid(subscription().id, namePrefix, 'ghost-capture-storage')
  properties: {
    roleName: '${storageDoc.Name} (${namePrefix})'
    description: storageDoc.Description
    type: 'CustomRole'
    permissions: [
      {
        actions: storageDoc.Actions
        notActions: storageDoc.NotActions
        dataActions: storageDoc.DataActions
        notDataActions: storageDoc.NotDataActions
      }
    ]
    assignableScopes: [
      subscription().id
    ]
  }
}

// The identities first, in a module of their own: their principal and client ids are outputs
// here, and parameters (known from the start) inside the modules that name things after them.
module identities 'modules/identities.bicep' = {
  name: 'ghost-identities'
  scope: ghostRg
  params: {
    location: location
    namePrefix: namePrefix
  }
}

// AcrPull before anything pulls: the apps and the job depend on it.
// the registry's id in parts (a stand-in id when there is none, so that the scope below never
// indexes past an empty string, even for a module that is not deployed)
var registryIdParts = split(empty(registryResourceId) ? '${subscription().id}/resourceGroups/${ghostResourceGroupName}/providers/Microsoft.ContainerRegistry/registries/none' : registryResourceId, '/')

module acrPull 'modules/acr-pull.bicep' = if (!empty(registryResourceId)) {
  name: 'ghost-acr-pull'
  scope: resourceGroup(registryIdParts[2], registryIdParts[4])
  params: {
    registryName: last(registryIdParts)
    principalIds: [
      identities.outputs.appPrincipalId
      identities.outputs.migratePrincipalId
    ]
  }
}

module ghost 'modules/ghost.bicep' = {
  name: 'ghost-resources'
  scope: ghostRg
  params: {
    location: location
    namePrefix: namePrefix
    image: image
    registryServer: empty(registryResourceId) ? '' : toLower('${last(registryIdParts)}${environment().suffixes.acrLoginServer}')
    appIdentityName: identities.outputs.appName
    appPrincipalId: identities.outputs.appPrincipalId
    appClientId: identities.outputs.appClientId
    migrateIdentityName: identities.outputs.migrateName
    migratePrincipalId: identities.outputs.migratePrincipalId
    migrateClientId: identities.outputs.migrateClientId
    webReplicas: webReplicas
    workerReplicas: workerReplicas
    captureRetentionDays: captureRetentionDays
    postgresAdminLogin: postgresAdminLogin
    postgresAdminPassword: postgresAdminPassword
    postgresSkuName: postgresSkuName
    postgresSkuTier: postgresSkuTier
    geminiApiKey: geminiApiKey
    slackBotToken: slackBotToken
    slackSigningSecret: slackSigningSecret
    teamsAppPassword: teamsAppPassword
    extraSettings: extraSettings
    captureStorageRoleId: captureStorageRole.id
    subscriptionId: subscription().subscriptionId
  }
  dependsOn: [
    acrPull
  ]
}

module investigate 'modules/role-assignment.bicep' = [for rg in union(investigatedResourceGroups, [networkWatcherResourceGroup]): {
  name: 'ghost-investigator-${uniqueString(rg)}'
  scope: resourceGroup(rg)
  params: {
    principalId: identities.outputs.appPrincipalId
    roleDefinitionId: investigatorRole.id
  }
}]

module flowLogs 'modules/flowlog-reader.bicep' = [for fl in flowLogStorage: {
  name: 'ghost-flowlogs-${uniqueString(fl.resourceGroup, fl.storageAccount)}'
  scope: resourceGroup(fl.resourceGroup)
  params: {
    storageAccountName: fl.storageAccount
    principalId: identities.outputs.appPrincipalId
    roleDefinitionId: flowLogRole.id
  }
}]

output webUrl string = ghost.outputs.webUrl
output identityClientId string = identities.outputs.appClientId
output keyVaultName string = ghost.outputs.keyVaultName
output captureStorageAccount string = ghost.outputs.captureStorageAccount
output captureStorageAccountId string = ghost.outputs.captureStorageAccountId
output captureContainer string = ghost.outputs.captureContainer
output migrateJobName string = ghost.outputs.migrateJobName
output logAnalyticsWorkspace string = ghost.outputs.logAnalyticsWorkspace
