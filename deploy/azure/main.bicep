// Ghost on Azure: one resource group with everything Ghost runs on, two custom roles at the
// subscription (deploy/azure/ghost-role.json and ghost-storage-role.json, checked by
// tests/deploy/test_role.py), and their assignments on the resource groups Ghost may investigate.
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

@description('Resource group of the regions\' Network Watchers (Azure creates NetworkWatcherRG).')
param networkWatcherResourceGroup string = 'NetworkWatcherRG'

@description('The Ghost image, e.g. myregistry.azurecr.io/ghost:0.1.0 (deploy/container/Dockerfile).')
param image string

@description('Registry login server when the image is private (the identity needs AcrPull on it); empty for a public image.')
param registryServer string = ''

@description('Which chat platform the web app\'s public ingress serves: slack (port 3000, /slack/events) or teams (port 3978, /api/messages).')
@allowed([
  'slack'
  'teams'
])
param chatPlatform string = 'slack'

@description('Replicas of the web app (ghost serve). At least 2, so a restart never drops Slack\'s 3-second acks.')
@minValue(2)
param webReplicas int = 2

@description('Replicas of the worker app (ghost worker).')
@minValue(1)
param workerReplicas int = 2

@description('Days a packet capture blob is kept in the capture container before the lifecycle rule deletes it.')
@minValue(1)
param captureRetentionDays int = 7

@description('PostgreSQL administrator login (password authentication; Ghost connects with it through the database-url secret).')
param postgresAdminLogin string = 'ghostadmin'

@description('PostgreSQL administrator password: letters and digits only (it goes into a URL), 24 or more.')
@secure()
@minLength(24)
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

@description('Secrets written to Key Vault; leave one empty to set it later with `az keyvault secret set` (then redeploy).')
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

module ghost 'modules/ghost.bicep' = {
  name: 'ghost-resources'
  scope: ghostRg
  params: {
    location: location
    namePrefix: namePrefix
    image: image
    registryServer: registryServer
    chatPlatform: chatPlatform
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
}

module investigate 'modules/role-assignment.bicep' = [for rg in union(investigatedResourceGroups, [networkWatcherResourceGroup]): {
  name: 'ghost-investigator-${uniqueString(rg)}'
  scope: resourceGroup(rg)
  params: {
    principalId: ghost.outputs.identityPrincipalId
    roleDefinitionId: investigatorRole.id
  }
}]

output webUrl string = ghost.outputs.webUrl
output identityClientId string = ghost.outputs.identityClientId
output keyVaultName string = ghost.outputs.keyVaultName
output captureStorageAccount string = ghost.outputs.captureStorageAccount
output captureContainer string = ghost.outputs.captureContainer
output migrateJobName string = ghost.outputs.migrateJobName
output logAnalyticsWorkspace string = ghost.outputs.logAnalyticsWorkspace
